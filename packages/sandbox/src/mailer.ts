import type { Participant } from '../../../src/esign/schemas.js';
import { nextSigner } from './records.js';
import type { SandboxStore, TransactionRow } from './store.js';

const DEFAULT_SUBJECT = 'Documents are waiting for your signature';

/**
 * The e-mails and text messages a provider sends, delivered to the sandbox's
 * outbox (`/_sandbox/outbox`) instead of the world: invitations (spec 2.2:
 * `notifyParticipants.email`, `emailSubject`, `personalizedMessage`; 2.5:
 * `inviteEmailSubject`) and one-time codes. Callers run these inside the
 * SQLite transaction of the change that causes them.
 */
export class SandboxMailer {
  readonly #store: SandboxStore;
  readonly #now: () => Date;

  constructor(store: SandboxStore, now: () => Date) {
    this.#store = store;
    this.#now = now;
  }

  /**
   * Invites whoever may sign now: everyone, or with `signingOrder` only the
   * next signer (the next one is invited when the previous finishes). Nothing
   * is sent when `notifyParticipants.email` is false.
   */
  inviteNext(t: TransactionRow): void {
    if (t.status !== 'esign_pending' || t.body.notifyParticipants?.email === false) return;
    const finished = this.#store.finishedParticipants(t.id);
    const invited = this.#store.evidence.invited(t.id);
    const due = t.body.signingOrder ? [nextSigner(t.body, finished)].filter((p) => p !== undefined) : t.body.participants;
    for (const p of due) {
      if (finished.has(p.id) || invited.has(p.id)) continue;
      this.#send(t, p, 'invitation', p.inviteEmailSubject ?? t.body.emailSubject ?? DEFAULT_SUBJECT, invitationBody(t, p));
    }
  }

  oneTimeCode(t: TransactionRow, p: Participant, code: string, minutes: number): void {
    const channel = p.twoFactorContact;
    const to = channel === 'sms' ? (p.phone ?? '') : p.email;
    this.#store.evidence.sendMessage({
      transactionId: t.id,
      participantId: p.id,
      channel,
      to,
      kind: 'one-time-code',
      subject: 'Your signing code',
      body: `Your code to open the documents is ${code}. It expires in ${minutes} minutes. Nobody from the sender will ask you for it.`,
      sentAt: this.#now().toISOString(),
    });
  }

  #send(t: TransactionRow, p: Participant, kind: 'invitation', subject: string, body: string): void {
    const at = this.#now().toISOString();
    this.#store.evidence.sendMessage({
      transactionId: t.id,
      participantId: p.id,
      channel: 'email',
      to: p.email,
      kind,
      subject,
      body,
      sentAt: at,
    });
    this.#store.evidence.audit(t.id, { at, type: 'invitation_sent', participantId: p.id, detail: { channel: 'email', to: p.email } });
  }
}

function invitationBody(t: TransactionRow, p: Participant): string {
  const titles = t.body.documents.map((d) => `  - ${d.title}`).join('\n');
  const message = t.body.personalizedMessage ?? 'You have been asked to review and sign the following documents.';
  return `Hello ${p.firstName} ${p.lastName},\n\n${message}\n\n${titles}\n\nYou will sign them in the application that sent you this request.`;
}
