// The adversarial corpus (test/corpus/), judged three ways: by our seal check (src/evidence/pades-verify.ts, on the
// whole file and in the one pass a large download gets), by EU DSS (test/support/dss.ts) and by pyHanko
// (test/support/pyhanko.ts). Our checks were written against the forgeries their authors thought of; here every
// verdict is held to two validators nobody here wrote:
//
//   1. our verdict is the variant's `expect` (and its `reason` is among our problems);
//   2. the whole-file check and the one-pass check agree;
//   3. whatever DSS or pyHanko refuses, we refuse;
//   4. whatever is expected to pass, all three accept;
//   5. a `must-refuse` variant is refused by both DSS and pyHanko.
//
// A disagreement fails its variant's test with the three reports side by side. The whole picture is written as a
// markdown table to test-artifacts/evidence-corpus.md (git-ignored; ESIGN_CORPUS_REPORT names another file), which
// docs/evidence.md cites.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPdfSignature, type PdfSignatureCheck } from '../../src/evidence/pades-verify.js';
import { StreamedPdf } from '../../src/evidence/pdf-stream.js';
import { archiveSpecs } from '../corpus/archive-variants.js';
import { corpusSpecs, generateCorpus, type Corpus, type Variant } from '../corpus/variants.js';
import { validateWithDss } from '../support/dss.js';
import type { ExternalVerdict } from '../support/external-verdict.js';
import { validateWithPyhanko } from '../support/pyhanko.js';

/**
 * The one pass a large download gets, scaled to the corpus: every document carries a 64 KiB annex right after its
 * catalog and page tree (test/corpus/pdf.ts `basePdf`), and the pass holds the first 16 KiB and all but the first
 * 48 KiB, so the middle of the annex is not held, as the middle of a large file is not.
 */
const onePassOptions = (length: number) => ({ holdWhole: 0, head: 16 * 1024, tail: Math.max(8 * 1024, length - 48 * 1024) });
const REPORT = process.env.ESIGN_CORPUS_REPORT ?? fileURLToPath(new URL('../../test-artifacts/evidence-corpus.md', import.meta.url));

interface Ours {
  accepted: boolean;
  indication: string;
  subIndication: string | null;
  level: string | null;
  problems: string[];
}

interface Judged {
  variant: Variant;
  whole: Ours;
  onePass: Ours | null;
  dss: ExternalVerdict | Error | undefined;
  pyhanko: ExternalVerdict | Error | undefined;
}

const ours = (check: PdfSignatureCheck): Ours => ({
  accepted: check.problems.length === 0 && check.indication === 'TOTAL_PASSED',
  indication: check.indication,
  subIndication: check.subIndication,
  level: check.level,
  problems: check.problems,
});

/** Our check never throws on a hostile file; if it does, that is a verdict too (a refusal, with the exception). */
async function judge(run: () => Promise<PdfSignatureCheck>): Promise<Ours> {
  try {
    return ours(await run());
  } catch (err) {
    return {
      accepted: false,
      indication: 'THREW',
      subIndication: null,
      level: null,
      problems: [`our check threw: ${(err as Error).stack}`],
    };
  }
}

function onePass(bytes: Buffer): StreamedPdf {
  const pass = new StreamedPdf(onePassOptions(bytes.length));
  for (let i = 0; i < bytes.length; i += 7_919) pass.update(bytes.subarray(i, i + 7_919));
  return pass;
}

let corpus: Corpus;
let dir: string;
const judged = new Map<string, Judged>();
/** Why a validator gave no verdicts at all (not installed, failed to build, crashed on the batch). */
const unavailable: { dss?: string; pyhanko?: string } = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'esign-corpus-'));
  const started = Date.now();
  corpus = await generateCorpus(dir, archiveSpecs());
  const generatedIn = Date.now() - started;
  const at = new Date();
  const pdfs = corpus.variants.filter((v) => v.kind === 'pdf');
  // The two external validators, one batch each for the whole directory, while we judge.
  const external = async (name: 'dss' | 'pyhanko') => {
    try {
      const files = pdfs.map((v) => v.file);
      return name === 'dss'
        ? await validateWithDss(files, corpus.pki.rootPem, { at })
        : await validateWithPyhanko(files, corpus.pki.rootPem, { at });
    } catch (err) {
      unavailable[name] = (err as Error).message;
      return undefined;
    }
  };
  const externals = Promise.all([external('dss'), external('pyhanko')]);
  for (const variant of corpus.variants) {
    if (variant.kind === 'zip') {
      const problems = variant.judge ? await variant.judge(variant.file, corpus.pki.trust, at) : ['no judge given for a ZIP variant'];
      const whole: Ours = {
        accepted: problems.length === 0,
        indication: problems.length ? 'REFUSED' : 'TOTAL_PASSED',
        subIndication: null,
        level: null,
        problems,
      };
      judged.set(variant.id, { variant, whole, onePass: null, dss: undefined, pyhanko: undefined });
      continue;
    }
    const bytes = await readFile(variant.file);
    const whole = await judge(() => checkPdfSignature(bytes, corpus.pki.trust, at));
    const streamed = await judge(() => checkPdfSignature(onePass(bytes).bytes(), corpus.pki.trust, at));
    judged.set(variant.id, { variant, whole, onePass: streamed, dss: undefined, pyhanko: undefined });
  }
  const [dss, pyhanko] = await externals;
  for (const j of judged.values()) {
    if (j.variant.kind !== 'pdf') continue;
    const name = basename(j.variant.file);
    j.dss = dss ? (dss.get(name) ?? new Error(`DSS gave no verdict for ${name}`)) : undefined;
    j.pyhanko = pyhanko ? (pyhanko.get(name) ?? new Error(`pyHanko gave no verdict for ${name}`)) : undefined;
  }
  console.log(`evidence corpus: ${corpus.variants.length} variants generated in ${generatedIn} ms into ${dir}`);
}, 20 * 60_000);

afterAll(async () => {
  if (!corpus) return;
  await mkdir(dirname(REPORT), { recursive: true });
  await writeFile(REPORT, report());
  console.log(`evidence corpus: report written to ${REPORT}`);
  if (!process.env.ESIGN_CORPUS_KEEP) await rm(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------------------------

const accepted = (v: ExternalVerdict | Error | undefined) => (v instanceof Error || v === undefined ? undefined : v.accepted);

function externalText(v: ExternalVerdict | Error | undefined, why: string | undefined): string {
  if (v === undefined) return `not run (${why ?? 'unavailable'})`;
  if (v instanceof Error) return `no verdict: ${v.message}`;
  const head = `${v.accepted ? 'ACCEPTED' : 'REFUSED'} ${v.indication}${v.subIndication ? `/${v.subIndication}` : ''}`;
  const per = v.signatures.map(
    (s) =>
      `    - ${s.kind ?? 'signature'} ${s.id}: ${s.indication}${s.subIndication ? `/${s.subIndication}` : ''}${s.level ? ` (${s.level})` : ''}${s.errors?.length ? `: ${s.errors.join('; ')}` : ''}`,
  );
  return [head, ...v.reasons.map((r) => `    reason: ${r}`), ...per].join('\n');
}

function oursText(o: Ours | null): string {
  if (!o) return 'not run';
  return [
    `${o.accepted ? 'ACCEPTED' : 'REFUSED'} ${o.indication}${o.subIndication ? `/${o.subIndication}` : ''} (level ${o.level ?? '-'})`,
    ...o.problems.map((p) => `    problem: ${p}`),
  ].join('\n');
}

function sideBySide(j: Judged): string {
  return [
    `variant ${j.variant.id} (${j.variant.class}): ${j.variant.description}`,
    `  expected: ${j.variant.expect}${j.variant.reason ? ` ${j.variant.reason}` : ''}; externals: ${j.variant.externals ?? 'either'}`,
    `  ours (whole file): ${oursText(j.whole)}`,
    `  ours (one pass):   ${oursText(j.onePass)}`,
    `  EU DSS:  ${j.variant.kind === 'zip' ? 'n/a (a ZIP)' : externalText(j.dss, unavailable.dss)}`,
    `  pyHanko: ${j.variant.kind === 'zip' ? 'n/a (a ZIP)' : externalText(j.pyhanko, unavailable.pyhanko)}`,
    `  file: ${j.variant.file}`,
  ].join('\n');
}

/** Every way this variant's verdicts break the five rules. */
function disagreements(j: Judged): string[] {
  const v = j.variant;
  const found: string[] = [];
  const weAccept = j.whole.accepted;
  if (v.expect === 'accept' && !weAccept) found.push('(1) expected accept, our check refuses');
  if (v.expect === 'refuse' && weAccept) found.push('(1) expected refuse, our check accepts');
  if (v.expect === 'refuse' && !weAccept && v.reason && !v.reason.test(j.whole.problems.join('\n')))
    found.push(`(1) refused, but not for the expected reason ${v.reason}`);
  if (
    j.onePass &&
    (j.onePass.accepted !== j.whole.accepted ||
      j.onePass.indication !== j.whole.indication ||
      j.onePass.subIndication !== j.whole.subIndication)
  )
    found.push('(2) the whole-file and one-pass readings disagree');
  // A refusal explained in the variant (a judge asked for more than the archive, or a judge's own limit) is not held
  // against our acceptance; the report prints the explanation.
  const dss = v.explained?.dss ? undefined : accepted(j.dss);
  const py = v.explained?.pyhanko ? undefined : accepted(j.pyhanko);
  if (weAccept && (dss === false || py === false))
    found.push(
      `(3) we accept what ${[dss === false && 'DSS', py === false && 'pyHanko'].filter(Boolean).join(' and ')} refuse${dss === false && py === false ? '' : 's'}`,
    );
  if (v.expect === 'accept' && (dss === false || py === false))
    found.push(
      `(4) expected accept, but ${[dss === false && 'DSS', py === false && 'pyHanko'].filter(Boolean).join(' and ')} refuse${dss === false && py === false ? '' : 's'}`,
    );
  if (v.externals === 'must-refuse' && (dss === true || py === true))
    found.push(
      `(5) must-refuse, but ${[dss === true && 'DSS', py === true && 'pyHanko'].filter(Boolean).join(' and ')} accept${dss === true && py === true ? '' : 's'}`,
    );
  if (v.externals === 'must-accept' && (dss === false || py === false)) found.push('(5) must-accept, but an external validator refuses');
  if (v.kind === 'pdf' && !unavailable.dss && j.dss instanceof Error) found.push(`DSS: ${j.dss.message}`);
  if (v.kind === 'pdf' && !unavailable.pyhanko && j.pyhanko instanceof Error) found.push(`pyHanko: ${j.pyhanko.message}`);
  return found;
}

// ---------------------------------------------------------------------------------------------------------------

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const verdictCell = (o: Ours | null) =>
  o ? `${o.accepted ? '✅ accept' : '❌ refuse'} ${o.indication}${o.subIndication ? `/${o.subIndication}` : ''}` : '—';
const externalCell = (v: ExternalVerdict | Error | undefined) =>
  v === undefined
    ? 'not run'
    : v instanceof Error
      ? 'no verdict'
      : `${v.accepted ? '✅ accept' : '❌ refuse'} ${v.indication}${v.subIndication ? `/${v.subIndication}` : ''}`;

function report(): string {
  const rows = [...judged.values()];
  const classes = [...new Set(rows.map((r) => r.variant.class))];
  const lines = [
    '# Evidence corpus: our seal check against EU DSS and pyHanko',
    '',
    `Generated by \`test/evidence/evidence-corpus.test.ts\` on ${new Date().toISOString()}: ${rows.length} variants (test/corpus/variants.ts).`,
    `Our check: \`checkPdfSignature\` on the whole file and in one pass; for the zip and trail classes, the archive's whole check (test/corpus/archive-variants.ts: \`evidenceCheck\` under \`require\`, as activities/archive.ts runs it), which DSS and pyHanko do not judge (n/a). DSS: ${unavailable.dss ? `not run (${cell(unavailable.dss).slice(0, 200)})` : 'test/support/dss.ts'}. pyHanko: ${unavailable.pyhanko ? `not run (${cell(unavailable.pyhanko).slice(0, 200)})` : 'test/support/pyhanko.ts'}.`,
    '',
    '## By class',
    '',
    '| class | variants | as expected (ours) | we accept | DSS accepts | pyHanko accepts | disagreements |',
    '|---|---|---|---|---|---|---|',
    ...classes.map((c) => {
      const of = rows.filter((r) => r.variant.class === c);
      const count = (f: (r: Judged) => boolean) => of.filter(f).length;
      const external = (f: (r: Judged) => boolean) => (of.every((r) => r.variant.kind === 'zip') ? 'n/a' : count(f));
      return `| ${c} | ${of.length} | ${count((r) => r.whole.accepted === (r.variant.expect === 'accept'))} | ${count((r) => r.whole.accepted)} | ${external((r) => accepted(r.dss) === true)} | ${external((r) => accepted(r.pyhanko) === true)} | ${count((r) => disagreements(r).length > 0)} |`;
    }),
    '',
    '## Every variant',
    '',
    '| class | variant | expected | ours (whole file) | ours (one pass) | DSS | pyHanko | disagreements |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.variant.class} | \`${r.variant.id}\`: ${cell(r.variant.description)} | ${r.variant.expect}${r.variant.externals && r.variant.externals !== 'either' ? ` (externals ${r.variant.externals})` : ''} | ${verdictCell(r.whole)}${r.variant.kind === 'zip' && r.whole.problems.length ? `: ${cell(r.whole.problems.join('; ')).slice(0, 400)}` : ''} | ${r.variant.kind === 'zip' ? 'n/a' : verdictCell(r.onePass)} | ${r.variant.kind === 'zip' ? 'n/a' : externalCell(r.dss)} | ${r.variant.kind === 'zip' ? 'n/a' : externalCell(r.pyhanko)} | ${cell([...disagreements(r), ...Object.entries(r.variant.explained ?? {}).map(([who, why]) => `explained (${who}): ${why}`)].join('; ')) || '—'} |`,
    ),
    '',
    '## Disagreements in full',
    '',
    ...rows.filter((r) => disagreements(r).length > 0).flatMap((r) => ['```', ...disagreements(r), sideBySide(r), '```', '']),
  ];
  if (corpus.failed.length)
    lines.push(
      '## Variants that could not be generated',
      '',
      ...corpus.failed.map((f) => `- \`${f.id}\`: ${cell(f.error.split('\n')[0]!)}`),
      '',
    );
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------

describe('the adversarial evidence corpus', () => {
  it('generates every variant, at least 60, quickly', () => {
    expect(corpus.failed.map((f) => `${f.id}: ${f.error}`)).toEqual([]);
    expect(corpus.variants.length).toBeGreaterThanOrEqual(60);
  });

  it('is judged by EU DSS and pyHanko', () => {
    expect(unavailable).toEqual({});
  });

  // One test per variant, named before the corpus exists: the specs are static.
  for (const spec of [...corpusSpecs(), ...archiveSpecs()]) {
    it(`${spec.class}: ${spec.id}`, () => {
      const j = judged.get(spec.id);
      expect(j, `variant ${spec.id} was not generated`).toBeDefined();
      const found = disagreements(j!);
      expect(found, `${found.join('\n')}\n${sideBySide(j!)}`).toEqual([]);
    });
  }
});
