import type { IframeStyle, Tag } from '../../../src/esign/schemas.js';
import type { AuthenticationPrompt } from './authentication.js';
import { nextSigner } from './records.js';
import type { SandboxStore, TransactionRow } from './store.js';
import { defaultTagValue, isRequired } from './tag-values.js';

export interface SigningTagView {
  docIndex: number;
  tagIndex: number;
  type: Tag['type'];
  page: number;
  x: number;
  y: number;
  width: number;
  height: number;
  required: boolean;
  participantId: string;
  suggested: string;
  /** Text the sender filled in (`customData.text`, e.g. a template's merge value): shown on the tag before it is applied. */
  prefilled: string | null;
  applied: string | null;
}

export interface SigningView {
  esignId: string;
  transactionId: string;
  title: string;
  style: IframeStyle;
  signingOrder: boolean;
  participants: { id: string; name: string; finished: boolean; yourTurn: boolean; waitingFor: string | null }[];
  /** Checks still to pass, one per participant of this address; until there are none, `documents` is empty. */
  authentication: AuthenticationPrompt[];
  documents: { index: number; title: string; pageSizes: [number, number][]; tags: SigningTagView[] }[];
}

/**
 * What a signing page shows for the participants of its address: who they
 * are and whose turn it is, the authentication still to pass, and, once it
 * is passed, the documents with their tags and suggested values.
 */
export function signingView(
  store: SandboxStore,
  t: TransactionRow,
  {
    participantIds,
    style,
    authentication,
    now,
  }: { participantIds: readonly string[]; style: IframeStyle; authentication: AuthenticationPrompt[]; now: Date },
): SigningView {
  const finished = store.finishedParticipants(t.id);
  const applied = new Map(store.appliedTags(t.id).map((a) => [`${a.docIndex}:${a.tagIndex}`, a.value]));
  const next = nextSigner(t.body, finished);
  const mine = new Set(participantIds);
  return {
    esignId: t.esignId,
    transactionId: t.id,
    title: t.body.documents.map((d) => d.title).join(', '),
    style,
    signingOrder: t.body.signingOrder === true,
    participants: participantIds.map((pid) => {
      const p = t.body.participants.find((x) => x.id === pid)!;
      const yourTurn = !finished.has(pid) && (!t.body.signingOrder || next?.id === pid);
      return {
        id: pid,
        name: `${p.firstName} ${p.lastName}`,
        finished: finished.has(pid),
        yourTurn,
        waitingFor: !finished.has(pid) && !yourTurn && next ? `${next.firstName} ${next.lastName}` : null,
      };
    }),
    authentication,
    // Nothing of the documents is shown before every participant of the address has authenticated.
    documents: (authentication.length > 0 ? [] : t.body.documents).map((d, docIndex) => {
      const upload = store.getUpload(d.StoragePath, t.org);
      return {
        index: docIndex,
        title: d.title,
        pageSizes: upload?.pageSizes ?? [[612, 792]],
        tags: d.tags
          .map((tag, tagIndex) => ({ tag, tagIndex }))
          .filter(({ tag }) => mine.has(tag.signerId))
          .map(({ tag, tagIndex }) => ({
            docIndex,
            tagIndex,
            type: tag.type,
            page: tag.page,
            x: tag.x,
            y: tag.y,
            width: tag.width,
            height: tag.height,
            required: isRequired(tag),
            participantId: tag.signerId,
            suggested: defaultTagValue(
              tag,
              t.body.participants.find((p) => p.id === tag.signerId)!,
              {
                now,
                documentId: d.id ?? '',
                esignId: t.esignId,
              },
            ),
            prefilled: typeof tag.customData.text === 'string' ? tag.customData.text : null,
            applied: applied.get(`${docIndex}:${tagIndex}`) ?? null,
          })),
      };
    }),
  };
}
