// A compliance officer downloads the current selection of the trail as one archive (a form
// posted with the CSRF token; a GET of the old link exports nothing); it verifies offline with
// `countersign audit verify --bundle`, fails after a one-byte edit, and the download itself is
// in the trail.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { expect, login, test } from './fixtures';
import { REPO_ROOT, serverBinary } from './server';

test.describe('download an audit export', () => {
  test('the selection downloads as a zip that verifies offline', async ({ page, api, server }) => {
    const tool = `audit.export_${randomBytes(4).toString('hex')}`;
    for (let i = 0; i < 3; i++) {
      await api.proposeOk(server.agentToken, { tool: { name: tool } });
      // Another proposal in between: the selection is not one stretch of the chain.
      await api.proposeOk(server.agentToken, { tool: { name: `${tool}_other` } });
    }

    await login(page, server.auditor);
    await page.goto(`/audit?tool=${tool}`);
    await expect(page.getByTestId('audit-row')).toHaveCount(3);
    // The download is a form posted with the CSRF token: an export is recorded, and no GET
    // changes state (an old link only shows the trail of the same filters).
    const form = page.getByTestId('audit-export');
    await expect(form).toHaveAttribute('method', 'post');
    await expect(form).toHaveAttribute('action', '/audit/export.zip');
    await expect(form.locator('input[name="tool"]')).toHaveValue(tool);
    const get = await page.request.get(`/audit/export.zip?tool=${tool}`, { maxRedirects: 0 });
    expect(get.status()).toBe(303);
    expect(get.headers()['location']).toBe(`/audit?tool=${tool}`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      form.getByRole('button', { name: 'Download this selection (.zip)' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^countersign-audit-\d+-\d+\.zip$/);

    const dir = mkdtempSync(path.join(tmpdir(), 'countersign-export-'));
    const zip = path.join(dir, 'export.zip');
    await download.saveAs(zip);
    const bundle = path.join(dir, 'bundle');
    // Python's zipfile is on every machine of this kind; unzip may not be.
    execFileSync('python3', ['-m', 'zipfile', '-e', zip, bundle]);
    expect(readdirSync(bundle).sort()).toEqual(['events.csv', 'events.jsonl', 'manifest.json']);
    const manifest = JSON.parse(readFileSync(path.join(bundle, 'manifest.json'), 'utf8'));
    expect(manifest.count).toBe(3);
    expect(manifest.contiguous).toBe(false);
    expect(manifest.selection).toEqual({ tool });

    // Offline: no database is opened to verify a bundle.
    const verify = () =>
      spawnSync(serverBinary(), ['audit', 'verify', '--bundle', bundle], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        env: { ...process.env, COUNTERSIGN_DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
      });
    const ok = verify();
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('ok: 3 events');

    const events = path.join(bundle, 'events.jsonl');
    const bytes = readFileSync(events);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
    writeFileSync(events, bytes);
    const bad = verify();
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('events.jsonl');

    // The export is itself audited, with what was selected: once (the GET recorded nothing).
    await page.goto(`/audit?kind=audit.exported&actor=${server.auditor.username}`);
    const recorded = page.getByTestId('audit-row').filter({ hasText: tool });
    await expect(recorded).toHaveCount(1);
    await expect(recorded).toContainText('count');
  });
});
