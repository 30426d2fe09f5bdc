// A reviewer clears a long queue: filters by the query string's public names, keyset pages,
// live updates without reload (the queue, and an open proposal page), the keyboard, domain limits, and a request for changes answered
// by a linked revision. Each test works in a domain of its own, so what other specs leave in the
// shared server's queue never shows in its filtered view.
import { randomUUID } from 'node:crypto';

import { expect, login, newSession, queueRow, test } from './fixtures';

/** A domain no other test uses. */
function freshDomain(): string {
  return `e2e-${randomUUID().slice(0, 8)}`;
}

const QUIET = {
  risk_level: 'low' as const,
  blast_radius: 'small' as const,
  compliance_context: { gdpr: false, hipaa: false },
};

test.describe('clear the queue', () => {
  test('filters and keyset pages show every proposal once', async ({ page, api, server }) => {
    const domain = freshDomain();
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) {
      ids.push((await api.proposeOk(server.agentToken, { ...QUIET, domain })).id);
    }
    const high = await api.proposeOk(server.agentToken, { ...QUIET, domain, risk_level: 'high' });
    await login(page, server.reviewer);

    // Filters through the form: a plain GET whose fields are the query string's names.
    await page.goto('/');
    await page.getByTestId('filter-domain').selectOption(domain);
    await page.getByTestId('queue-apply').click();
    await expect(page).toHaveURL(new RegExp(`[?&]domain=${domain}`));
    await expect(page.getByTestId('queue-count')).toContainText('54 of');
    await expect(page.getByTestId('queue-row')).toHaveCount(50);

    // The next page carries on where the first stopped; nothing repeats, nothing is skipped.
    const seen = await page.getByTestId('queue-row').evaluateAll((rows) =>
      rows.map((r) => r.getAttribute('data-proposal-id')),
    );
    await page.getByTestId('queue-next').click();
    await expect(page.getByTestId('queue-row')).toHaveCount(4);
    seen.push(
      ...(await page.getByTestId('queue-row').evaluateAll((rows) =>
        rows.map((r) => r.getAttribute('data-proposal-id')),
      )),
    );
    expect(seen).toEqual([...ids, high.id]);
    await expect(page.getByTestId('queue-next')).toHaveCount(0);
    await page.getByTestId('queue-first').click();
    await expect(page.getByTestId('queue-row')).toHaveCount(50);

    // Highest risk first, and a second filter narrows.
    await page.goto(`/?domain=${domain}&sort=risk`);
    await expect(page.getByTestId('queue-row').first()).toHaveAttribute('data-proposal-id', high.id);
    await page.goto(`/?domain=${domain}&risk=high`);
    await expect(page.getByTestId('queue-row')).toHaveCount(1);
    await expect(page.getByTestId('queue-count')).toContainText('1 of');

    // Leave the shared queue's first page to the other specs: reject these through the form.
    await page.goto(`/proposals/${high.id}`);
    const csrf = await page.locator('input[name=csrf_token]').first().getAttribute('value');
    for (const id of [...ids, high.id]) {
      const r = await page.request.post('/fn/decide_proposal', {
        form: { csrf_token: csrf ?? '', id, verdict: 'rejected', reason: 'clean-up after the spec' },
        headers: { referer: `${server.baseURL}/proposals/${id}`, origin: server.baseURL, accept: 'text/html' },
        maxRedirects: 0,
      });
      expect(r.status()).toBe(302);
    }
    await page.goto(`/?domain=${domain}`);
    await expect(page.getByTestId('queue-empty')).toBeVisible();
  });

  test('a new proposal and a colleague decision appear without reload', async ({ page, browser, api, server }) => {
    const domain = freshDomain();
    const first = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    await login(page, server.reviewer);
    await page.goto(`/?domain=${domain}`);
    await expect(queueRow(page, first.id)).toBeVisible();
    await expect(page.locator('[data-testid=queue-keys][data-ready="1"]')).toBeVisible();
    // The desk's stream is open: every change from now on is told to the page.
    await expect(page.locator('[data-testid=queue-keys][data-live="1"]')).toBeVisible();

    // An agent submits while the page is open: the row arrives by itself.
    const second = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    await expect(queueRow(page, second.id)).toBeVisible();

    // A colleague rejects the first in another browser: it leaves this page by itself.
    const colleague = await newSession(browser, server);
    try {
      await login(colleague.page, server.reviewer2);
      await colleague.page.goto(`/proposals/${first.id}`);
      await colleague.page.locator('form.reject textarea[name=reason]').fill('Not this week.');
      await colleague.page.locator('button[data-testid=reject]').click();
      await expect(colleague.page.getByTestId('proposal-status')).toHaveText('rejected');
    } finally {
      await colleague.context.close();
    }
    await expect(queueRow(page, first.id)).toHaveCount(0);
    await expect(queueRow(page, second.id)).toBeVisible();
  });

  test('an open proposal page shows a colleague decision without reload', async ({ page, browser, api, server }) => {
    const domain = freshDomain();
    const { id } = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    await login(page, server.reviewer);
    await page.goto(`/proposals/${id}`);
    await expect(page.locator('button[data-testid=approve]')).toBeVisible();
    // The page listens once hydrated (its stream is open).
    await expect(page.locator('[data-testid=proposal-back][data-live="1"]')).toBeVisible();

    const colleague = await newSession(browser, server);
    try {
      await login(colleague.page, server.reviewer2);
      await colleague.page.goto(`/proposals/${id}`);
      await colleague.page.locator('form.reject textarea[name=reason]').fill('Not this week.');
      await colleague.page.locator('button[data-testid=reject]').click();
      await expect(colleague.page.getByTestId('proposal-status')).toHaveText('rejected');
    } finally {
      await colleague.context.close();
    }
    // This page follows by itself: the new status, who decided, and no forms to decide again.
    await expect(page.getByTestId('proposal-status')).toHaveText('rejected');
    await expect(page.locator('button[data-testid=approve]')).toHaveCount(0);
    await expect(page.locator('article.proposal')).toContainText(server.reviewer2.username);
  });

  test('keyboard: j selects, a opens the approve form, Enter approves', async ({ page, api, server }) => {
    const domain = freshDomain();
    const { id } = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    await login(page, server.reviewer);
    await page.goto(`/?domain=${domain}`);
    await expect(queueRow(page, id)).toBeVisible();
    // Keys work once the page has hydrated.
    await expect(page.locator('[data-testid=queue-keys][data-ready="1"]')).toBeVisible();

    await page.keyboard.press('?');
    await expect(page.getByTestId('key-help')).toBeVisible();
    await page.keyboard.press('?');
    await expect(page.getByTestId('key-help')).toHaveCount(0);

    await page.keyboard.press('j');
    await expect(queueRow(page, id)).toHaveClass(/selected/);
    await page.keyboard.press('a');
    await expect(page).toHaveURL(new RegExp(`/proposals/${id}\\?act=approve`));
    await expect(page.locator('button[data-testid=approve]')).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');

    // Run it, so the shared executor queue is left as it was.
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect((await api.complete(server.executorToken, lease.command.id, lease.lease_token, { ok: true })).status).toBe(200);
  });

  test('a reviewer limited to a domain sees and opens only that domain', async ({ page, api, server }) => {
    const billing = await api.proposeOk(server.agentToken, { ...QUIET, domain: 'e2e-billing' });
    const other = await api.proposeOk(server.agentToken, { ...QUIET, domain: freshDomain() });
    await login(page, server.limited);
    await expect(page.getByTestId('queue-limited')).toContainText('e2e-billing');
    await expect(queueRow(page, billing.id)).toBeVisible();
    await expect(queueRow(page, other.id)).toHaveCount(0);
    const r = await page.goto(`/proposals/${other.id}`);
    expect(r?.status()).toBe(404);
  });

  test('request changes; the agent revises; the pages link both with a diff', async ({ page, api, server }) => {
    const domain = freshDomain();
    const first = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    await login(page, server.reviewer);
    await page.goto(`/proposals/${first.id}`);
    await page.locator('form.request-changes textarea[name=reason]').fill('Use the work address.');
    await page.getByTestId('request-changes').click();
    await expect(page.getByTestId('proposal-status')).toHaveText('changes_requested');

    const seen = await api.getProposal(server.agentToken, first.id);
    expect(seen.body?.proposal).toMatchObject({
      status: 'changes_requested',
      review: { decision: 'changes_requested', reason: 'Use the work address.' },
    });

    const revised = await api.proposeOk(server.agentToken, {
      ...QUIET,
      domain,
      parameters: { contact_id: 'c-123', email: 'work@example.com' },
      supersedes: first.id,
    });
    await page.goto(`/proposals/${revised.id}`);
    await expect(page.getByTestId('revises')).toHaveAttribute('href', `/proposals/${first.id}`);
    await expect(page.getByTestId('revision-diff')).toContainText('/email');
    await expect(page.getByTestId('revision-diff')).toContainText('work@example.com');
    await page.getByTestId('revises').click();
    await expect(page.getByTestId('revised-by')).toHaveAttribute('href', `/proposals/${revised.id}`);
  });
});
