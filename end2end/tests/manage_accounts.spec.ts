// An admin manages accounts and tokens from the admin pages: a token made there is shown once
// and works on the API until it is revoked, when its very next request gets 401; a disabled
// person's open session ends at their next request.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

import { expect, login, newSession, test } from './fixtures';

/** A webhook receiver on loopback: keeps every request's signature and body. */
async function receiver(): Promise<{ url: string; got: { signature: string; body: string }[]; close: () => void }> {
  const got: { signature: string; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      got.push({ signature: String(req.headers['countersign-signature'] ?? ''), body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, got, close: () => server.close() };
}

/** Checks `t=…,v1=…` as a receiver would: HMAC-SHA256 over "t.body", constant-time. */
function verifies(secret: string, header: string, body: string): boolean {
  const fields = Object.fromEntries(header.split(',').map((part) => part.split('=', 2)));
  const expected = createHmac('sha256', secret).update(`${fields.t}.${body}`).digest();
  const given = Buffer.from(fields.v1 ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

test.describe('manage accounts and tokens', () => {
  test('admin creates and revokes a token; the revoked token gets 401 at once', async ({ page, api, server }) => {
    await login(page, server.admin);
    await expect(page.getByTestId('nav-admin')).toBeVisible();
    await page.getByTestId('nav-admin').click();
    await page.getByTestId('admin-tokens').click();
    await expect(page).toHaveURL('/admin/tokens');

    const name = `e2e-agent-${Date.now()}`;
    await page.getByTestId('token-name').fill(name);
    await page.getByTestId('create-token').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    const token = (await page.getByTestId('secret').innerText()).trim();
    expect(token.length).toBeGreaterThan(20);

    const proposed = await api.propose(token, { proposed_by: name });
    expect(proposed.status, proposed.text).toBe(201);
    const id = proposed.body?.proposal.id ?? '';
    expect((await api.getProposal(token, id)).status).toBe(200);

    // Shown once: a reload does not show it again.
    await page.reload();
    await expect(page.getByTestId('secret')).toHaveCount(0);

    const row = page.locator(`[data-testid=token-row][data-name="${name}"]`);
    await row.getByTestId('revoke-token').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(row.getByTestId('token-revoked')).not.toHaveText('');
    expect((await api.getProposal(token, id)).status).toBe(401);
  });

  test('admin gives an agent token a webhook; its signed deliveries are listed', async ({ page, api, server }) => {
    const hook = await receiver();
    try {
      await login(page, server.admin);
      await page.goto('/admin/tokens');
      const name = `e2e-hooked-${Date.now()}`;
      await page.getByTestId('token-name').fill(name);
      await page.getByTestId('token-webhook').fill(hook.url);
      await page.getByTestId('create-token').click();
      await expect(page.getByTestId('flash-notice')).toBeVisible();
      const token = (await page.getByTestId('secret').innerText()).trim();
      const secret = (await page.getByTestId('webhook-secret').innerText()).trim();
      expect(secret).toMatch(/^csw_/);
      const row = page.locator(`[data-testid=token-row][data-name="${name}"]`);
      await expect(row.getByTestId('token-webhook-url')).toHaveText(hook.url);

      const proposed = await api.propose(token, { proposed_by: name });
      expect(proposed.status, proposed.text).toBe(201);
      const id = proposed.body?.proposal.id ?? '';
      await expect.poll(() => hook.got.length).toBeGreaterThan(0);
      const delivery = hook.got[0];
      if (delivery === undefined) throw new Error('no webhook delivery arrived');
      expect(verifies(secret, delivery.signature, delivery.body)).toBe(true);
      expect(JSON.parse(delivery.body).proposal).toMatchObject({ id, status: proposed.body?.proposal.status });

      await page.getByTestId('nav-admin').click();
      await page.getByTestId('admin-webhooks').click();
      await expect(page).toHaveURL('/admin/webhooks');
      const listed = page.locator('[data-testid=delivery-row]', { hasText: id });
      await expect(async () => {
        await page.reload();
        await expect(listed).toHaveAttribute('data-state', 'delivered', { timeout: 1000 });
      }).toPass();
      await expect(listed.getByTestId('delivery-attempt')).toHaveAttribute('data-status', '204');
    } finally {
      hook.close();
    }
  });

  test('admin disables a user; their open session ends', async ({ page, browser, server }) => {
    const { context, page: victim } = await newSession(browser, server);
    await login(victim, server.disposable);
    await expect(victim.getByTestId('viewer')).toBeVisible();

    await login(page, server.admin);
    await page.goto('/admin/users');
    await page.getByTestId(`disable-${server.disposable.username}`).click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(page.getByTestId(`enable-${server.disposable.username}`)).toBeVisible();

    await victim.goto('/');
    await expect(victim).toHaveURL(/\/login/);
    await context.close();
  });
});

