// docs/workflow.md's state diagram is the transition table the workflow uses
// (workflows/transaction/transitions.ts): a move added to one and not the
// other fails here. The message prints the block to paste.
import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { FINAL, stateDiagram, TRANSITIONS } from '../../workflows/transaction/transitions.js';

it("docs/workflow.md draws exactly the workflow's transition table", async () => {
  const doc = await readFile(new URL('../../docs/workflow.md', import.meta.url), 'utf8');
  const drawn = /```mermaid\n(stateDiagram-v2\n[\s\S]*?)\n```/.exec(doc)?.[1];
  expect(drawn, `docs/workflow.md needs this diagram:\n\`\`\`mermaid\n${stateDiagram()}\n\`\`\``).toBe(stateDiagram());
});

it('every phase but the ends can be left, and every phase can be reached from the start', () => {
  const reachable = new Set(['uploading']);
  for (let grown = true; grown;) {
    grown = false;
    for (const t of TRANSITIONS) if (reachable.has(t.from) && !reachable.has(t.to)) grown = reachable.add(t.to) !== undefined;
  }
  const phases = new Set(TRANSITIONS.flatMap((t) => [t.from, t.to]));
  expect([...phases].filter((p) => !reachable.has(p))).toEqual([]);
  expect([...phases].filter((p) => !FINAL.includes(p) && !TRANSITIONS.some((t) => t.from === p && t.to !== p))).toEqual([]);
});
