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
  // Everything of a document but its tags (compared below) and its id (optional on update, so made anew when left
  // out): its file, title, annotations, visibility, order.
  const withoutTags = ({ tags: _, id: __, ...d }: TransactionBody['documents'][number]) => d;
  const sameDocuments =
    next.documents.length === current.documents.length &&
    next.documents.every((d, i) => isDeepStrictEqual(withoutTags(d), withoutTags(current.documents[i]!)));
  if (!sameDocuments) refuse('the documents can no longer change');
  const signedTags = (body: TransactionBody) => body.documents.map((d) => d.tags.filter((t) => signed.has(t.signerId)));
  for (const id of signed) {
    const before = current.participants.find((p) => p.id === id);
    const after = next.participants.find((p) => p.id === id);
    if (!after) refuse(`participant ${id} cannot be removed`);
    if (!isDeepStrictEqual(before, after)) refuse(`participant ${id} cannot change`);
    // Every field of their tags: size, font, format and data change what the stamp shows.
    const tagsOf = (body: TransactionBody) => body.documents.map((d) => d.tags.filter((t) => t.signerId === id));
    if (!isDeepStrictEqual(tagsOf(current), tagsOf(next))) refuse(`the tags of participant ${id} cannot change`);
  }
  // Nothing new may be stamped over what was signed.
  next.documents.forEach((d, i) => {
    const covered = signedTags(current)[i]!;
    for (const t of d.tags)
      if (!signed.has(t.signerId) && covered.some((s) => overlaps(s, t)))
        refuse(`a tag of participant ${t.signerId} would lie over a signed one on page ${t.page} of document ${i}`);
  });
  // A transaction whose every participant has signed is complete; an update cannot make it so without completing it.
  if (next.participants.every((p) => signed.has(p.id))) refuse('nothing would be left to sign; cancel the transaction or let it complete');
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

/** What identifies a tag on its page, to find a signed one again at its new position. */
function placement(t: Tag): unknown[] {
  return [t.signerId, t.type, t.page, t.x, t.y, t.width, t.height];
}

function overlaps(a: Tag, b: Tag): boolean {
  return a.page === b.page && a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}
