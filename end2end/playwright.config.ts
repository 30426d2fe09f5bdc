// End-to-end tests for Countersign: every spec runs once per storage backend, each backend in its
// own worker with its own server and fresh database (see tests/fixtures.ts).
import { defineConfig } from '@playwright/test';

import type { WorkerOptions } from './tests/fixtures';
import { BACKENDS, type Backend } from './tests/server';

/** COUNTERSIGN_E2E_BACKENDS="sqlite" or "sqlite,postgres" picks projects; default: all. */
function selectedBackends(): Backend[] {
  const raw = process.env.COUNTERSIGN_E2E_BACKENDS;
  if (raw === undefined || raw.trim() === '') return [...BACKENDS];
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const name of names) {
    if (!(BACKENDS as readonly string[]).includes(name)) {
      throw new Error(`COUNTERSIGN_E2E_BACKENDS: unknown backend "${name}" (known: ${BACKENDS.join(', ')})`);
    }
  }
  // Keep the canonical order so runs are ordered the same whatever the variable's order.
  return BACKENDS.filter((b) => names.includes(b));
}

export default defineConfig<{}, WorkerOptions>({
  testDir: './tests',
  // Two cores, one shared server per worker, and specs that read a shared executor queue.
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: true,
  reporter: 'list',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  use: {
    browserName: 'chromium',
    headless: true,
    // Debian's Chromium; never a downloaded build. The networking flags keep it off the network.
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
  projects: selectedBackends().map((backend) => ({ name: backend, use: { backend } })),
});
