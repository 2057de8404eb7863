// `npx tsx bench/profile-summary.ts <file.cpuprofile> [top]`: where a process spent its CPU, from a V8
// profile written by `--cpu-prof` (BENCH_PROFILE_DIR makes the benchmarks' worker write one). Self time is
// grouped by package (node_modules), our own modules, Node's internals, and V8's own (GC, idle, native).
// Then the time spent in packages, charged to the function of ours that called into them (the nearest
// caller in src/ or activities/): which of our steps the library time belongs to.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function groupOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : `(native) ${name || 'anonymous'}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node internals';
  const ours = /\/(src|activities|workflows|bench)\/(.+)$/.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

async function main(): Promise<void> {
  const [file, topArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top]');
  const profile = JSON.parse(await readFile(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const us = profile.timeDeltas[i] ?? 0;
    total += us;
    const group = groupOf(node.callFrame.url, node.callFrame.functionName);
    self.set(group, (self.get(group) ?? 0) + us);
  });
  const busy = total - (self.get('(idle)') ?? 0);
  const rows = [...self.entries()].filter(([g]) => g !== '(idle)').sort((a, b) => b[1] - a[1]);
  process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy\n`);
  const top = Number(topArg ?? 25);
  for (const [group, us] of rows.slice(0, top)) {
    process.stdout.write(`${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1e6).toFixed(2).padStart(7)} s  ${group}\n`);
  }

  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const callers = new Map<string, number>();
  let inPackages = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    if (!/node_modules\//.test(node.callFrame.url)) return;
    const us = profile.timeDeltas[i] ?? 0;
    inPackages += us;
    let at: number | undefined = id;
    // A library resumed by a promise job has no caller of ours on its stack: its time stays unattributed.
    let caller = '(no caller of ours: resumed by a promise job, or the SDK)';
    while (at !== undefined) {
      const frame = byId.get(at)!.callFrame;
      const ours = frame.url.includes('node_modules/') ? null : /\/(src|activities)\/(.+)$/.exec(frame.url);
      if (ours) {
        caller = `${frame.functionName || '(anonymous)'} (${ours[1]}/${ours[2]})`;
        break;
      }
      at = parent.get(at);
    }
    callers.set(caller, (callers.get(caller) ?? 0) + us);
  });
  process.stdout.write(`\npackages' ${(inPackages / 1e6).toFixed(2)} s, by the function of ours that called them:\n`);
  for (const [caller, us] of [...callers.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1e6).toFixed(2).padStart(7)} s  ${caller}\n`);
  }
}

await main();
