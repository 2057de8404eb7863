// The PDF reading under the seal check (src/evidence/pdf-increments.ts, pdf-xref.ts, pdf-bytes.ts): values compared
// as a reader parses them, cross-reference streams decoded, and the scan for object headers giving the same marks
// whatever the chunking of the one pass. The forgeries these guard against are in test/evidence/evidence-forgeries.test.ts.
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { StructureScan, type StructureMarks } from '../../src/evidence/pdf-bytes.js';
import { decodeStream, Reader, readXrefStream, sameValue, type PdfDict, type PdfValue } from '../../src/evidence/pdf-increments.js';
import { seededRandom } from '../../src/util/seeded-random.js';

const value = (text: string): PdfValue => new Reader(Buffer.from(text, 'latin1'), 0).value();

describe('PDF values, compared as parsed', () => {
  it.each([
    ['(a  b)', '(a b)', false],
    ['(a\\040b)', '(a b)', true],
    ['<6162>', '(ab)', true],
    ['<616>', '(a`)', true],
    ['(line\r\nend)', '(line\nend)', true],
    ['(line\\\nend)', '(lineend)', true],
    ['(\\(nested (parens)\\))', '<284E6E65737465642028706172656E7329 29>', false],
    ['/A#42', '/AB', true],
    ['/AB', '/Ab', false],
    ['1', '1.0', true],
    ['-0', '0', true],
    ['0003', '3', true],
    ['3', '3.0001', false],
    ['1 0 R', '1 1 R', false],
    ['[1 2]', '[1 2 3]', false],
    ['<< /A 1 /B (x) >>', '<< /B (x) /A 1.0 >>', true],
    ['<< /A 1 >>', '<< /A 1 /B null >>', false],
    ['true', 'true', true],
    ['true', '(true)', false],
  ])('%s and %s are the same: %s', (a, b, same) => {
    expect(sameValue(value(a), value(b))).toBe(same);
  });

  it('refuses what readers read two ways: a key given twice, a malformed name', () => {
    expect(() => value('<< /A 1 /A 2 >>')).toThrow(/gives \/A twice/);
    expect(() => value('<< /A#41 1 /AA 2 >>')).toThrow(/gives \/AA twice/);
    expect(() => value('/A#4G')).toThrow(/malformed name/);
  });
});

describe('cross-reference streams', () => {
  it('are decoded with FlateDecode and a PNG predictor, /W and /Index', () => {
    const rows = [
      [1, 0, 0x10, 0],
      [1, 0, 0x80, 0],
      [2, 0, 9, 1],
    ];
    const up = rows.flatMap((row, y) => [2, ...row.map((v, x) => (v - (y > 0 ? rows[y - 1]![x]! : 0)) & 0xff)]);
    const dict = value(
      '<< /Type /XRef /Size 12 /W [1 2 1] /Index [3 1 10 2] /Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 4 >> >>',
    ) as PdfDict;
    expect(readXrefStream(dict, deflateSync(Buffer.from(up)), 0)).toEqual([
      { num: 3, type: 1, offset: 0x10, gen: 0, stream: 0 },
      { num: 10, type: 1, offset: 0x80, gen: 0, stream: 0 },
      { num: 11, type: 2, offset: 1, gen: 0, stream: 9 },
    ]);
  });

  it('refuse a filter they do not read, and rows that are not whole', () => {
    const dict = value('<< /Type /XRef /Size 1 /W [1 2 1] /Filter /LZWDecode >>') as PdfDict;
    expect(() => decodeStream(dict, Buffer.alloc(4), 'the stream')).toThrow(/encoded with \/LZWDecode/);
    const plain = value('<< /Type /XRef /Size 2 /W [1 2 1] >>') as PdfDict;
    expect(() => readXrefStream(plain, Buffer.alloc(5), 0)).toThrow(/not the 2 rows of 4/);
  });
});

describe('the scan for object headers', () => {
  const marksOf = (file: Buffer, chunk: (i: number) => number) => {
    const scan = new StructureScan();
    for (let at = 0, i = 0; at < file.length; i++) {
      const n = chunk(i);
      scan.update(file.subarray(at, at + n));
      at += n;
    }
    return plain(scan.finish());
  };
  const plain = (m: StructureMarks) => ({
    headers: [...m.offsets.subarray(0, m.count)].map((o, i) => [o, m.nums[i], m.gens[i]]),
    objStms: [...m.objStms],
  });

  it('finds the same headers and /ObjStm names whatever the chunking, one byte at a time included', () => {
    const random = seededRandom(7);
    const parts: Buffer[] = [];
    const planted = [
      '12 0 obj',
      '\n0000000007 00000 obj<<',
      'endobj',
      '1 0 objective',
      `3${' '.repeat(70)}0 obj `,
      '/Type /ObjStm ',
      '/Obj#53tm/',
      '/ObjStmX ',
      '99999999999 0 obj ',
      '5\r\n0\r\nobj\n',
    ];
    for (let i = 0; i < 400; i++) {
      const noise = Buffer.alloc(Math.floor(random() * 300));
      for (let k = 0; k < noise.length; k++) noise[k] = Math.floor(random() * 256);
      parts.push(noise, Buffer.from(planted[i % planted.length]!, 'latin1'));
    }
    const file = Buffer.concat(parts);
    const whole = marksOf(file, () => file.length);
    expect(whole.headers.length).toBeGreaterThanOrEqual(160);
    // Each planted kind is read as a reader would: numbers with leading zeros, an unreadable long one, none for "objective".
    expect(whole.headers.some(([, num, gen]) => num === 7 && gen === 0)).toBe(true);
    expect(whole.headers.some(([, num]) => num === -1)).toBe(true);
    expect(whole.objStms.length).toBe(80);
    for (const size of [1, 2, 3, 7, 64, 127, 128, 129, 1000])
      expect(
        marksOf(file, () => size),
        `chunks of ${size}`,
      ).toEqual(whole);
    expect(marksOf(file, () => 1 + Math.floor(random() * 500))).toEqual(whole);
  });
});
