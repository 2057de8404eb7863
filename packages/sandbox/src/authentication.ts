import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import type { Participant } from '../../../src/esign/schemas.js';
import type { AuditEvent } from '../../../src/esign/evidence.js';
import { SandboxError } from './errors.js';
import type { SandboxMailer } from './mailer.js';
import type { SandboxStore, TransactionRow } from './store.js';

/** The checks a signer passes, in order, before the documents are shown (docs/spec-gaps.md, row 42). */
export type AuthenticationStep = 'personal-password' | 'two-factor-authentication' | 'kba' | 'credential-analysis';

/** Where a request came from, for the audit trail. */
export interface ClientInfo {
  ip?: string;
  userAgent?: string;
}

/** What the signing page shows for the next step. Never the secret itself. */
export interface AuthenticationPrompt {
  participantId: string;
  step: AuthenticationStep;
  prompt: string;
  /** Where a one-time code went, masked (`a***@example.com`, `***-0123`). */
  sentTo?: string;
  attemptsLeft: number;
  lockedUntil?: string;
}

export interface AuthenticationOptions {
  now: () => Date;
  maxAttempts: number;
  lockoutSeconds: number;
  codeTtlSeconds: number;
}

export const DEFAULT_AUTHENTICATION_OPTIONS: Omit<AuthenticationOptions, 'now'> = {
  maxAttempts: 5,
  lockoutSeconds: 900,
  codeTtlSeconds: 600,
};

export function authenticationSteps(p: Participant): AuthenticationStep[] {
  const steps: AuthenticationStep[] = [];
  if (p.authenticationType === 'personal-password') steps.push('personal-password');
  if (p.authenticationType === 'two-factor-authentication') steps.push('two-factor-authentication');
  if (p.kbaRequired) steps.push('kba');
  if (p.credAnalysisRequired) steps.push('credential-analysis');
  return steps;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const sameSecret = (given: string, expected: string) => timingSafeEqual(digest(given), digest(expected));
const normalized = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();

function mask(channel: 'email' | 'sms', to: string): string {
  if (channel === 'sms') return `***${to.replace(/\D/g, '').slice(-4)}`;
  const [local = '', domain = ''] = to.split('@');
  return `${local.slice(0, 1)}***@${domain}`;
}

/**
 * Signer authentication on the signing page. Steps are passed per signing
 * session (a new link means authenticating again); failures count per
 * participant across sessions, and `maxAttempts` of them lock the participant
 * out for `lockoutSeconds`. Every attempt lands in the audit trail; answers
 * and codes never do. One-time codes are stored hashed and go to the outbox.
 */
export class SignerAuthentication {
  readonly #store: SandboxStore;
  readonly #mailer: SandboxMailer;
  readonly #options: AuthenticationOptions;

  constructor(store: SandboxStore, mailer: SandboxMailer, options: AuthenticationOptions) {
    this.#store = store;
    this.#mailer = mailer;
    this.#options = options;
  }

  /** The next step this participant must pass in this session, or undefined when all are passed. */
  next(t: TransactionRow, participantId: string, session: string): AuthenticationPrompt | undefined {
    const p = this.#participant(t, participantId);
    const passed = this.#store.evidence.passedSteps(session, participantId);
    const step = authenticationSteps(p).find((s) => !passed.has(s));
    if (!step) return undefined;
    const state = this.#store.evidence.authState(t.id, participantId);
    const locked = this.#lockedUntil(state.lockedUntil);
    const prompt: AuthenticationPrompt = {
      participantId,
      step,
      prompt: promptFor(step, p),
      attemptsLeft: locked ? 0 : this.#options.maxAttempts - state.failures,
      ...(locked ? { lockedUntil: locked } : {}),
    };
    if (step === 'two-factor-authentication') prompt.sentTo = mask(p.twoFactorContact, contactOf(p));
    return prompt;
  }

  /** Refuses an action until every step is passed in this session. */
  require(t: TransactionRow, participantId: string, session: string): void {
    const pending = this.next(t, participantId, session);
    if (pending)
      throw new SandboxError('forbidden', `authentication required first: ${pending.step}`, undefined, 'authentication_required');
  }

  /** Sends a fresh one-time code (replacing any earlier one) by the participant's `twoFactorContact`. */
  sendCode(t: TransactionRow, participantId: string, client: ClientInfo): void {
    const p = this.#participant(t, participantId);
    if (p.authenticationType !== 'two-factor-authentication') throw new SandboxError('conflict', 'this participant has no two-factor step');
    const state = this.#store.evidence.authState(t.id, participantId);
    if (this.#lockedUntil(state.lockedUntil))
      throw new SandboxError('locked', 'too many failed attempts; try again later', undefined, 'locked');
    const now = this.#options.now();
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    this.#store.transaction(() => {
      this.#store.evidence.setAuthState(t.id, participantId, {
        ...state,
        codeHash: digest(`${t.id}:${participantId}:${code}`).toString('hex'),
        codeExpiresAt: new Date(now.getTime() + this.#options.codeTtlSeconds * 1000).toISOString(),
      });
      this.#mailer.oneTimeCode(t, p, code, Math.round(this.#options.codeTtlSeconds / 60));
      this.#audit(t, { type: 'one_time_code_sent', participantId, detail: { channel: p.twoFactorContact } }, client);
    });
  }

  /** Checks one answer to the participant's next step; throws a 422 naming the attempts left, or 423 when locked out. */
  submit(t: TransactionRow, participantId: string, session: string, step: AuthenticationStep, answer: string, client: ClientInfo): void {
    const pending = this.next(t, participantId, session);
    if (!pending) return;
    if (pending.step !== step) throw new SandboxError('conflict', `the next step is ${pending.step}, not ${step}`);
    if (pending.lockedUntil)
      throw new SandboxError('locked', `too many failed attempts; locked until ${pending.lockedUntil}`, undefined, 'locked');
    const p = this.#participant(t, participantId);
    const state = this.#store.evidence.authState(t.id, participantId);
    const now = this.#options.now();
    let ok: boolean;
    switch (step) {
      case 'personal-password':
        ok = sameSecret(answer, p.personalPassword ?? '');
        break;
      case 'two-factor-authentication':
        ok =
          state.codeHash !== null &&
          state.codeExpiresAt !== null &&
          new Date(state.codeExpiresAt) > now &&
          timingSafeEqual(digest(`${t.id}:${participantId}:${answer.trim()}`), Buffer.from(state.codeHash, 'hex'));
        break;
      case 'kba':
        ok = normalized(answer) === normalized(kbaAnswer(p));
        break;
      case 'credential-analysis':
        ok = normalized(answer) === normalized(`${p.firstName} ${p.lastName}`);
        break;
    }
    const at = now.toISOString();
    this.#store.transaction(() => {
      if (ok) {
        this.#store.evidence.passStep(session, participantId, step, at);
        // A used code cannot be replayed; failures start over.
        this.#store.evidence.setAuthState(t.id, participantId, { failures: 0, lockedUntil: null, codeHash: null, codeExpiresAt: null });
        this.#audit(t, { type: 'authentication_passed', participantId, detail: { step } }, client);
        return;
      }
      const failures = state.failures + 1;
      const locked = failures >= this.#options.maxAttempts;
      this.#store.evidence.setAuthState(t.id, participantId, {
        failures: locked ? 0 : failures,
        lockedUntil: locked ? new Date(now.getTime() + this.#options.lockoutSeconds * 1000).toISOString() : null,
        codeHash: locked ? null : state.codeHash,
        codeExpiresAt: locked ? null : state.codeExpiresAt,
      });
      this.#audit(t, { type: 'authentication_failed', participantId, detail: { step, attempt: failures } }, client);
      if (locked)
        this.#audit(t, { type: 'authentication_locked', participantId, detail: { step, seconds: this.#options.lockoutSeconds } }, client);
    });
    if (ok) return;
    const after = this.next(t, participantId, session)!;
    if (after.lockedUntil)
      throw new SandboxError('locked', `too many failed attempts; locked until ${after.lockedUntil}`, undefined, 'locked');
    throw new SandboxError('validation', `${step} not accepted; ${after.attemptsLeft} attempt(s) left`, undefined, 'authentication_failed');
  }

  #lockedUntil(lockedUntil: string | null): string | undefined {
    return lockedUntil && new Date(lockedUntil) > this.#options.now() ? lockedUntil : undefined;
  }

  #participant(t: TransactionRow, participantId: string): Participant {
    const p = t.body.participants.find((x) => x.id === participantId);
    if (!p) throw new SandboxError('not_found', `participant ${participantId} is not in this transaction`);
    return p;
  }

  #audit(t: TransactionRow, e: Omit<AuditEvent, 'seq' | 'at'>, client: ClientInfo): void {
    this.#store.evidence.audit(t.id, { ...e, at: this.#options.now().toISOString(), ...client });
  }
}

export function contactOf(p: Participant): string {
  return p.twoFactorContact === 'sms' ? (p.phone ?? '') : p.email;
}

/** The simulated knowledge-based check's answer: the postal code on file, or the last name when there is none. */
function kbaAnswer(p: Participant): string {
  return p.zip ?? p.lastName;
}

function promptFor(step: AuthenticationStep, p: Participant): string {
  switch (step) {
    case 'personal-password':
      return p.personalPasswordQuestion ?? 'Enter the password the sender gave you.';
    case 'two-factor-authentication':
      return `Enter the 6-digit code sent by ${p.twoFactorContact === 'sms' ? 'SMS' : 'e-mail'}.`;
    case 'kba':
      return p.zip
        ? 'Knowledge-based check (simulated): enter the postal code on file.'
        : 'Knowledge-based check (simulated): enter your last name as on file.';
    case 'credential-analysis':
      return 'ID check (simulated): type your full name exactly as printed on your ID.';
  }
}
