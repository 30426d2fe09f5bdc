// A reviewer reads a proposal that uses every part of the command: each field the executor
// receives has its row, hidden characters are flagged, times read as people read them, and the
// page fits a laptop (1280 px) and a phone (390 px) without sideways scrolling.
import type { Page } from '@playwright/test';

import { expect, login, test } from './fixtures';

/** Every node of a JSON value with its RFC 6901 pointer. */
function nodes(pointer: string, v: unknown, out: [string, unknown][] = []): [string, unknown][] {
  out.push([pointer, v]);
  const token = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  if (Array.isArray(v)) v.forEach((item, i) => nodes(`${pointer}/${i}`, item, out));
  else if (v !== null && typeof v === 'object')
    for (const [k, child] of Object.entries(v)) nodes(`${pointer}/${token(k)}`, child, out);
  return out;
}

const QUEUE_FIELDS = ['id', 'proposal_id', 'status', 'kind', 'rollback_of', 'attempts', 'created_at', 'completed_at'];

async function fitsWidth(page: Page, width: number, shot: string): Promise<void> {
  await page.setViewportSize({ width, height: 900 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, `no sideways scrolling at ${width} px`).toBeLessThanOrEqual(0);
  await page.screenshot({ path: test.info().outputPath(shot), fullPage: true });
}

test.describe('view a proposal', () => {
  test('every field of the command is on the page, readable at 1280 and 390 px', async ({ page, api, server }) => {
    // An earlier proposal for the same tool, so the agent's record has something to show.
    await api.proposeOk(server.agentToken);
    const { id, input } = await api.proposeOk(server.agentToken, {
      intent: { summary: 'Archive the export at /srv/exports/\u202Efdp.exe' },
      blast_radius: 'small',
      compliance_context: { gdpr: false, hipaa: false },
      parameters: {
        contact_id: 'c-123',
        path: '/srv/exports/\u202Efdp.exe',
        options: { compress: true, level: 9, exclude: ['*.tmp', '*.log'] },
        password: 'hunter2-but-longer',
      },
      constraints: { scope: 'tenant:acme', max_records: 500 },
      preconditions: [{ check: 'ttl_ok' }, { resource_state: 'active' }],
      execution: { execution_slo_ms: 2000, timeout_ms: 30000, retry_policy: { max_retries: 2, backoff_ms: 500 } },
      rollback_plan: { type: 'revert', instructions: { steps: ['delete the archive'] }, timeout_ms: 60000 },
    });

    await login(page, server.reviewer);
    await page.goto(`/proposals/${id}`);
    await expect(page.getByTestId('hidden-chars')).toBeVisible();
    await expect(page.getByTestId('proposal-summary')).toContainText('⟦U+202E⟧');
    await expect(page.locator('[data-field="/constraints/scope"] .v')).toHaveText('tenant:acme');
    await expect(page.locator('[data-field="/execution/retry_policy/max_retries"] .v')).toHaveText('2');
    await expect(page.locator('[data-field="/parameters/password"] [data-masked=secret]')).toBeVisible();
    await expect(page.getByTestId('agent-history')).toContainText('earlier proposal');
    // Times in words, the exact UTC time on hover; never a raw ISO string.
    const proposed = page.locator('.proposal .meta time');
    await expect(proposed).toHaveText(/ago|just now/);
    await expect(proposed).toHaveAttribute('title', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await expect(page.getByTestId('proposal-expires')).toContainText('expires in');

    await fitsWidth(page, 1280, 'proposal-1280.png');
    await fitsWidth(page, 390, 'proposal-390.png');

    await page.setViewportSize({ width: 1280, height: 900 });
    await page.locator('button[data-testid=approve]').click();
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect(lease.command.parameters).toEqual(input.parameters);

    // Field by field: every node of the leased command has its row; plain leaves show their value.
    await page.reload();
    const spec = Object.entries(lease.command).filter(([k]) => !QUEUE_FIELDS.includes(k));
    for (const [key, value] of spec) {
      for (const [pointer, v] of nodes(`/${key}`, value)) {
        const row = page.locator(`[data-field="${pointer}"]`);
        await expect(row, pointer).toHaveCount(1);
        const plain = v === null || ['string', 'number', 'boolean'].includes(typeof v);
        if (plain && pointer !== '/approved_at' && pointer !== '/parameters/password') {
          const text = typeof v === 'string' ? v.replace('\u202E', '⟦U+202E⟧') : JSON.stringify(v);
          await expect(row.locator('.v'), pointer).toHaveText(text);
        }
      }
    }
    await fitsWidth(page, 390, 'proposal-approved-390.png');
    expect((await api.complete(server.executorToken, lease.command.id, lease.lease_token, { ok: true })).status).toBe(
      200,
    );
  });
});
