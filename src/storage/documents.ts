/**
 * Documents a backend hands the orchestrator through the object store the workers read (`ESIGN_TEMPLATE_STORE`):
 * where one is kept, and the limits both sides apply. Free of server libraries: the client package uses it.
 * The layout is recorded in docs/decisions/document-object-store.md.
 */

/** The key of a document stored by its SHA-256 (lowercase hex): `uploads/<sha256>.pdf`. */
export function documentObjectKey(sha256: string): string {
  if (!SHA256_HEX.test(sha256)) throw new RangeError(`not a lowercase hex SHA-256: ${JSON.stringify(sha256)}`);
  return `uploads/${sha256}.pdf`;
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The largest document a worker uploads unless `ESIGN_MAX_DOCUMENT_BYTES` says otherwise (25 MiB). */
export const DEFAULT_MAX_DOCUMENT_BYTES = 25 * 1024 * 1024;

/** Whether bytes start as a PDF does (`%PDF-`), the check the worker applies to every source. */
export function isPdfHead(head: Uint8Array): boolean {
  return head.length >= 5 && Buffer.from(head.subarray(0, 5)).toString('latin1') === '%PDF-';
}
