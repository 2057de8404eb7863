/**
 * Each participant's progress as the provider reports it, for the status
 * query, search attributes and the Web UI's one-line current details.
 * Deduplicated and order-independent: states only move forward (pending ->
 * viewed -> signed or declined), so a late or repeated report changes nothing.
 */
import type { ParticipantState } from '../activities/transactions.js';
import type { Participant } from '../src/esign/schemas.js';

const RANK: Record<ParticipantState['status'], number> = { pending: 0, viewed: 1, signed: 2, declined: 2 };

export class Progress {
  readonly #participants: readonly Participant[];
  #states = new Map<string, ParticipantState>();
  /** Participants whose signature was already announced to the integrator. */
  readonly announced: Set<string>;

  constructor(participants: readonly Participant[], states: ParticipantState[] | null = null, announced: readonly string[] = []) {
    this.#participants = participants;
    for (const s of states ?? []) this.#states.set(s.id, s);
    this.announced = new Set(announced);
  }

  /** Whether the provider has reported progress at all. */
  get known(): boolean {
    return this.#states.size > 0;
  }

  get states(): ParticipantState[] | null {
    return this.known ? this.#participants.map((p) => this.#states.get(p.id) ?? { id: p.id, status: 'pending' }) : null;
  }

  /** Takes the provider's report; returns whether anything moved forward. */
  apply(states: readonly ParticipantState[] | undefined): boolean {
    let moved = false;
    for (const s of states ?? []) {
      const before = this.#states.get(s.id);
      if (before && RANK[before.status] >= RANK[s.status]) continue;
      this.#states.set(s.id, s);
      moved = true;
    }
    return moved;
  }

  /** Signed participants not yet announced; marks them announced. */
  takeNewlySigned(): ParticipantState[] {
    const fresh = [...this.#states.values()].filter((s) => s.status === 'signed' && !this.announced.has(s.id));
    for (const s of fresh) this.announced.add(s.id);
    return fresh;
  }

  statusOf(id: string): ParticipantState['status'] | undefined {
    return this.#states.get(id)?.status;
  }

  get signedCount(): number {
    return [...this.#states.values()].filter((s) => s.status === 'signed').length;
  }

  /** Participants who have neither signed nor declined, in order. */
  get waiting(): Participant[] {
    return this.#participants.filter((p) => {
      const status = this.#states.get(p.id)?.status;
      return status !== 'signed' && status !== 'declined';
    });
  }

  /** "2 of 3 signed; waiting for Alan Turing", for the Web UI. */
  summary(): string {
    const waiting = this.waiting.map((p) => `${p.firstName} ${p.lastName}`);
    const head = `${this.signedCount} of ${this.#participants.length} signed`;
    return waiting.length === 0 ? head : `${head}; waiting for ${waiting.join(', ')}`;
  }
}
