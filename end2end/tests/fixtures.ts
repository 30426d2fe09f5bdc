// Playwright fixtures: one Countersign server per worker and backend, a typed API client per
// test, and page helpers. Specs import `test` and `expect` from here, never from @playwright/test.
import {
  test as base,
  expect,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type Page,
} from '@playwright/test';
import path from 'node:path';

import AxeBuilder from '@axe-core/playwright';

import { CountersignApi } from './api';
import { startServer, type Backend, type Credentials, type ServerInfo } from './server';

export { expect };
export type { Backend, Credentials, ServerInfo };

/** Set per project in playwright.config.ts. */
export interface WorkerOptions {
  backend: Backend;
}

interface WorkerFixtures {
  server: ServerInfo;
}

interface TestFixtures {
  api: CountersignApi;
}

export const test = base.extend<TestFixtures, WorkerOptions & WorkerFixtures>({
  backend: ['sqlite', { option: true, scope: 'worker' }],

  // Worker-scoped: building the database and hashing three passwords is too slow to do per test.
  server: [
    async ({ backend }, use, workerInfo) => {
      const logFile = path.join(
        workerInfo.project.outputDir,
        `server-${workerInfo.project.name}-worker${workerInfo.workerIndex}.log`,
      );
      const running = await startServer(backend, logFile);
      try {
        await use(running.info);
      } finally {
        await running.stop();
      }
    },
    { scope: 'worker', timeout: 180_000 },
  ],

  // The built-in baseURL option, taken from the server so `page.goto('/login')` works.
  baseURL: async ({ server }, use) => {
    await use(server.baseURL);
  },

  api: async ({ server }, use) => {
    await use(new CountersignApi(server.baseURL, server.agentNames));
  },

  // Every page runs under the server's Content-Security-Policy: a violation the browser
  // reports on the console (a blocked script, style or wasm compile) fails the test.
  page: async ({ page }, use) => {
    const violations = watchCsp(page);
    await use(page);
    expect(violations, 'Content-Security-Policy violations on the console').toEqual([]);
  },
});

/** Collects the console's Content-Security-Policy violations of `page` as they happen. */
export function watchCsp(page: Page): string[] {
  const violations: string[] = [];
  page.on('console', (msg) => {
    if (/content[- ]security[- ]policy/i.test(msg.text())) violations.push(msg.text());
  });
  return violations;
}

/** Signs in through the login form and waits to land on the queue. */
export async function login(page: Page, user: Credentials): Promise<void> {
  await page.goto('/login');
  await page.locator('input[name=username]').fill(user.username);
  await page.locator('input[name=password]').fill(user.password);
  await page.locator('button[type=submit]').click();
  await expect(page).toHaveURL('/');
}

/**
 * A second, isolated browser session (its own cookies), e.g. another reviewer or a browser with
 * JavaScript off. baseURL is passed explicitly so the helper does not lean on runner defaults.
 */
export async function newSession(
  browser: Browser,
  server: ServerInfo,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL: server.baseURL, ...options });
  const page = await context.newPage();
  return { context, page };
}

/** The queue row of one proposal. */
export function queueRow(page: Page, proposalId: string) {
  return page.locator(`[data-testid=queue-row][data-proposal-id="${proposalId}"]`);
}

/**
 * Opens the queue, newest first (what a spec just submitted is on the first page, whatever
 * earlier specs left pending), and waits until it has rendered (some row, or the empty notice).
 */
export async function openQueue(page: Page): Promise<void> {
  await page.goto('/?sort=newest');
  await expect(page.locator('[data-testid=queue-row], [data-testid=queue-empty]').first()).toBeVisible();
}

/**
 * Runs axe-core on the page as it stands and fails on any WCAG 2.2 A/AA violation, naming each
 * rule and the elements that break it.
 */
export async function expectAccessible(page: Page, what: string, screenshot?: string): Promise<void> {
  // A picture of what was checked, for people to look at (test-results/…).
  if (screenshot !== undefined) await page.screenshot({ path: screenshot, fullPage: true });
  const results = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'])
    .analyze();
  const found = results.violations.map(
    (v) => `${v.id} (${v.impact ?? 'n/a'}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
  expect(found, `axe-core violations on ${what}`).toEqual([]);
}
