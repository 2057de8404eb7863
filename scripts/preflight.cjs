// Stops a command at once, with one line that says what to do, on a Node.js this project cannot run on: older
// ones install with a warning, then die deep inside undici or segfault loading better-sqlite3. Plain old
// JavaScript on purpose: its job is to run on the Node it refuses. Keep the versions in step with
// package.json's `engines` (a test checks that they are).
'use strict';
var parts = process.versions.node.split('.').map(Number);
var major = parts[0];
var minor = parts[1];
if (!(major >= 24 || (major === 22 && minor >= 12))) {
  process.stderr.write(
    'esign-orchestrator needs Node.js 22.12 or newer (24 is what it is tested on); this is ' +
      process.version +
      '. Get Node 24 with: eval "$(bash scripts/ensure-node.sh)"\n',
  );
  process.exit(1);
}
