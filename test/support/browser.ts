import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Frame, type FrameLocator, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's Chromium (installed by .ci/run), or CHROMIUM_PATH. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error('Chromium not found: install Debian package "chromium" (see .ci/run) or set CHROMIUM_PATH');
  return found;
}

// Offline machine: keep Chromium from reaching for Google's services.
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ARGS });
}

/**
 * Chromium with a profile of its own whose cookie setting is the user's choice named: third-party cookies
 * blocked (as Safari and Firefox do by default, and many Chrome users choose), or allowed. Close the context to quit.
 */
export async function launchChromiumProfile(thirdPartyCookies: 'blocked' | 'allowed'): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'chromium-profile-'));
  await mkdir(join(profile, 'Default'), { recursive: true });
  const blocked = thirdPartyCookies === 'blocked';
  // Chromium's own preference behind Settings > Privacy > Third-party cookies.
  await writeFile(
    join(profile, 'Default', 'Preferences'),
    JSON.stringify({ profile: { cookie_controls_mode: blocked ? 1 : 0, block_third_party_cookies: blocked } }),
  );
  return chromium.launchPersistentContext(profile, { executablePath: chromiumPath(), headless: true, args: ARGS });
}

/**
 * Whether a page in this (cross-site) frame can keep a cookie: it sets one the way an embedded page would need to
 * (SameSite=None; Secure) and reads it back, and asks the Storage Access API.
 */
export async function frameKeepsCookies(frame: Frame): Promise<{ cookieKept: boolean; storageAccess: boolean }> {
  return frame.evaluate(`(async () => {
    document.cookie = 'esign-probe=1; SameSite=None; Secure; Path=/';
    return { cookieKept: document.cookie.includes('esign-probe=1'), storageAccess: await document.hasStorageAccess() };
  })()`);
}

/**
 * Applies every tag still open on a signing page (or the frame holding one),
 * one at a time, waiting for each to show applied, then finishes signing.
 */
export async function signEveryTag(scope: Page | FrameLocator): Promise<void> {
  await scope.locator('body[data-pages-rendered="true"]').waitFor();
  const open = scope.locator('button.tag:not(.applied):not([disabled])');
  const applied = scope.locator('button.tag.applied');
  while ((await open.count()) > 0) {
    const before = await applied.count();
    await open.first().click();
    await expect.poll(() => applied.count()).toBeGreaterThan(before);
  }
  await scope.locator('button.finish:not([disabled])').click();
  await scope.locator('text=Thank you').waitFor();
}
