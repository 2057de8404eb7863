import {
  maxZipBytes,
  readDirectory,
  ZipOverLimit,
  ZipWalker,
  type EntryInspector,
  type VerifiedEntry,
  type ZipLimits,
} from './zip-verify.js';

export type StreamVerdict = { entries: VerifiedEntry[] } | { fallback: string };

/**
 * Verifies a ZIP while it downloads, in the same pass that writes it to disk:
 * each entry's CRC-32, SHA-256, size and first bytes from its local header
 * and data, and its content shown to `inspect` (the seals, the audit trail)
 * as soon as the entry ends. The download is read as a sequential extractor
 * reads it (`ZipWalker`): it must start with a local header, and each entry
 * must be followed at once by the next local header or the central
 * directory. At the end, `finish` reads the central directory from the
 * written file, judges it as `verifyZip` does (nothing after the end record,
 * no comment), and checks it lists exactly the entries the stream showed, at
 * the offsets it showed them, with the same names, flags, methods, CRC-32 and
 * sizes: an entry hidden from one view or the other is refused.
 *
 * Stored entries (with sizes in the header or a data descriptor after the
 * data) and deflated entries with known sizes are verified on the fly. For
 * a layout it cannot follow (a deflated entry with a data descriptor, which
 * ends where its deflate stream does) it stops looking and `finish` says to
 * fall back to `verifyZip` on the file, which walks it a second time with the
 * directory in hand.
 */
export class StreamingZipVerifier {
  private readonly walker: ZipWalker;
  private received = 0;

  constructor(
    private readonly limits: ZipLimits,
    inspector?: EntryInspector,
  ) {
    this.walker = new ZipWalker(limits, inspector);
  }

  /**
   * Takes the next chunk of the download. Throws (`ZipOverLimit`) once the ZIP is over its limits, so the rest is not
   * downloaded: past the most bytes they allow (`maxZipBytes`), or an entry over one. Any other problem is kept for
   * `finish`, which names the central directory's first, and what the inspector found only for a sound ZIP.
   */
  async update(chunk: Buffer): Promise<void> {
    this.received += chunk.length;
    if (this.received > maxZipBytes(this.limits))
      throw new ZipOverLimit(`the completed ZIP is over ${maxZipBytes(this.limits)} bytes, more than its limits allow`);
    await this.walker.update(chunk);
    if (this.walker.problem instanceof ZipOverLimit) throw this.walker.problem;
  }

  /**
   * After the whole ZIP is on disk at `path`: the verified entries, or why the file must be verified on its
   * own. As in `verifyZip`, the central directory's verdict comes first: a structural problem is named before
   * what the stream found in an entry, and what the inspector found is named only for a sound ZIP.
   */
  async finish(path: string): Promise<StreamVerdict> {
    const fallback = this.walker.fallbackReason();
    if (fallback !== undefined) return { fallback };
    const directory = await readDirectory(path, this.limits);
    return { entries: this.walker.conclude(directory) };
  }
}
