/**
 * Notifications the transaction holds for later: those that came before it
 * knew its provider ids (matched once it does), and completions naming another
 * provider transaction with this referenceId (handed to the late path,
 * ./strays.ts). Bounded: a flood of forged signals cannot grow the state.
 */
import { log } from '@temporalio/workflow';
import { ESIGN_COMPLETED_EVENT } from '../../src/esign/events.js';
import type { EsignCompletedWebhook, EsignWebhook } from '../../src/esign/schemas.js';

const HELD_MAX = 20;

export class Held {
  readonly early: EsignWebhook[] = [];
  readonly strays: EsignCompletedWebhook[] = [];

  /** Before creation. A completion displaces another event (a poll finds those), never another completion. */
  holdEarly(notification: EsignWebhook): void {
    const id = notification.data.notificationId;
    if (this.early.some((n) => n.data.notificationId === id)) return;
    const displaced = this.early.length < HELD_MAX ? -1 : this.early.findIndex((n) => n.event !== ESIGN_COMPLETED_EVENT);
    if (this.early.length < HELD_MAX || (notification.event === ESIGN_COMPLETED_EVENT && displaced >= 0)) {
      if (displaced >= 0) this.early.splice(displaced, 1);
      this.early.push(notification);
    } else log.warn('notification before creation dropped: too many held', { notificationId: id });
  }

  /** Another transaction's notification: a completion is kept for the late path, anything else ignored. */
  holdStray(notification: EsignWebhook): void {
    const id = notification.data.notificationId;
    if (notification.event === ESIGN_COMPLETED_EVENT && this.strays.length < HELD_MAX) {
      // Checked with the provider before anything is archived: a forged one changes nothing.
      this.strays.push(notification as EsignCompletedWebhook);
      log.warn('a completion of another transaction with this referenceId: handing it to the late path', { notificationId: id });
    } else log.warn('notification for another transaction ignored', { notificationId: id });
  }

  /** Once created: the early ones, to be matched now. */
  takeEarly(): EsignWebhook[] {
    return this.early.splice(0);
  }

  /** A run that ends without ever creating its transaction: a completion it held is not its own. */
  strayEarly(): void {
    for (const held of this.takeEarly()) if (held.event === ESIGN_COMPLETED_EVENT) this.holdStray(held);
  }
}
