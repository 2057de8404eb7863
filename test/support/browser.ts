import { existsSync } from 'node:fs';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's Chromium (installed by .ci/run), or CHROMIUM_PATH. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error('Chromium not found: install Debian package "chromium" (see .ci/run) or set CHROMIUM_PATH');
  return found;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Offline machine: keep Chromium from reaching for Google's services.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
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
