import { createHash } from 'node:crypto';

/**
 * The digest of the bytes a signature covers, by the digest algorithm its
 * CMS names (pkijs's names: "SHA-256", ...). Throws with the reason when that
 * digest cannot be had (a large file checked as it streamed past knows only
 * the SHA-256 of the spans it saw named).
 */
export type Digester = (algorithm: string) => Buffer;

/**
 * A PDF as a seal check sees it: the whole file in memory, or what a single
 * pass over a large one kept (its first and last bytes, and the SHA-256 of
 * every span a /ByteRange named). Reads outside what is held say so, and the
 * check refuses what it cannot read: never "not checked".
 */
export interface PdfBytes {
  readonly length: number;
  /** The whole file, when it is held. */
  readonly whole: Buffer | undefined;
  /** Bytes [start, end), or undefined when they are not all held. */
  slice(start: number, end: number): Buffer | undefined;
  /** The held window containing `offset`, and where that window starts in the file. */
  windowAt(offset: number): { buf: Buffer; start: number } | undefined;
  /** The last occurrence of `text` that starts before `before`, in the held bytes; -1 when none. */
  lastIndexOf(text: string, before: number): number;
  /** The digest of [0, b) followed by [c, c + d). */
  span(b: number, c: number, d: number): Digester;
  /** Whether bytes of the file are not held (a large file checked as it streamed past). */
  readonly partial: boolean;
  /** What is held, for the reason a read failed. */
  readonly held: string;
}

/** pkijs's digest names to Node's. */
export function nodeDigest(algorithm: string): string {
  const name = algorithm.toUpperCase().replace(/^SHA-?/, 'sha');
  if (!/^sha(1|256|384|512)$/.test(name)) throw new Error(`the digest algorithm ${algorithm} is not supported`);
  return name;
}

/** A PDF held whole: every span's digest is computed over views of it, with no copy. */
export function wholePdf(pdf: Buffer): PdfBytes {
  return {
    length: pdf.length,
    whole: pdf,
    slice: (start, end) => (start >= 0 && end <= pdf.length && start <= end ? pdf.subarray(start, end) : undefined),
    windowAt: (offset) => (offset >= 0 && offset < pdf.length ? { buf: pdf, start: 0 } : undefined),
    lastIndexOf: (text, before) => (before <= 0 ? -1 : pdf.lastIndexOf(text, before - 1)),
    span: (b, c, d) => (algorithm) =>
      createHash(nodeDigest(algorithm))
        .update(pdf.subarray(0, b))
        .update(pdf.subarray(c, c + d))
        .digest(),
    partial: false,
    held: 'the whole file',
  };
}
