/**
 * An update (4.4) of a transaction someone has already signed: a correction.
 *
 * A real provider lets the sender correct a transaction in flight (reassign a
 * signer, fix an e-mail address, add or remove a signer) but never what was
 * signed: the documents, and each signed participant with their tags, must
 * come back unchanged. What they signed is kept; everyone else starts over.
 * The store keys an applied tag by its position, which an added or removed
 * tag shifts, so each kept one is found again in the new body by content.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Tag } from '../../../src/esign/schemas.js';
import { SandboxError } from './errors.js';
import type { AppliedTagRow, TransactionBody } from './store.js';

/** The signed participants' applied tags, at their positions in `next`; refuses a change to anything they signed. */
export function keptSignatures(
  current: TransactionBody,
  next: TransactionBody,
  signed: ReadonlySet<string>,
  applied: readonly AppliedTagRow[],
): AppliedTagRow[] {
  const refuse = (why: string): never => {
    throw new SandboxError('conflict', `a participant has already signed: ${why}`);
  };
  const sameDocuments =
    next.documents.length === current.documents.length &&
    next.documents.every((d, i) => d.StoragePath === current.documents[i]!.StoragePath && d.title === current.documents[i]!.title);
  if (!sameDocuments) refuse('the documents can no longer change');
  for (const id of signed) {
    const before = current.participants.find((p) => p.id === id);
    const after = next.participants.find((p) => p.id === id);
    if (!after) refuse(`participant ${id} cannot be removed`);
    if (!isDeepStrictEqual(before, after)) refuse(`participant ${id} cannot change`);
    const tagsOf = (body: TransactionBody) => body.documents.map((d) => d.tags.filter((t) => t.signerId === id).map(placement));
    if (!isDeepStrictEqual(tagsOf(current), tagsOf(next))) refuse(`the tags of participant ${id} cannot change`);
  }
  const taken = new Set<string>();
  return applied
    .filter((a) => signed.has(a.participantId))
    .map((a) => {
      const tag = current.documents[a.docIndex]!.tags[a.tagIndex]!;
      // Two tags alike (same signer, same place) take one position each.
      const at = next.documents[a.docIndex]!.tags.findIndex(
        (t, i) => !taken.has(`${a.docIndex}:${i}`) && isDeepStrictEqual(placement(t), placement(tag)),
      );
      taken.add(`${a.docIndex}:${at}`);
      return { ...a, tagIndex: at };
    });
}

/** What identifies a tag on its page (fields like `customData` may be reshaped by the sender). */
function placement(t: Tag): unknown[] {
  return [t.signerId, t.type, t.page, t.x, t.y, t.width, t.height];
}
