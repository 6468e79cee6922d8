/**
 * Debian's Chromium, headless, driven by playwright-core (no browser download): a fresh profile per launch,
 * no background traffic, removed on close.
 */
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from '../../lib/lab-paths';

export const CHROMIUM = '/usr/bin/chromium';

/** Where tests leave screenshots for a person to look at (gitignored). */
export function artifactPath(name: string): string {
  const dir = path.join(PROJECT_ROOT, 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: run infra/bootstrap.sh (it installs Debian's chromium)`);
  const profile = mkdtempSync(path.join(os.tmpdir(), 'storage-lab-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: { width: 1400, height: 1100 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
