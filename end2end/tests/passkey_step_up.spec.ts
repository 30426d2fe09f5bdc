// Passkey step-up in Chromium, with its virtual authenticator (DevTools protocol
// `WebAuthn.addVirtualAuthenticator`): the policy asks a passkey for refunds; a reviewer without
// one is told where to add one, registers one on their account page, and approves with it
// (the page's script fetches the challenge, which binds the request hash, and the browser
// signs it). Refused by the server: an answer to a made-up challenge, another proposal's
// answer replayed, and an answer without user verification. (The challenge's binding, the
// batch refusal and the trail are also tested over HTTP, tests/api/passkeys.rs.)
//
// WebAuthn needs a secure context whose host is a domain: the pages are opened at
// http://localhost:<port> (the relying party when no --public-url is set).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { CountersignApi } from './api';
import { expect, login, newSession, test, type ServerInfo } from './fixtures';
import { startServer, type RunningServer } from './server';
import type { Page } from '@playwright/test';

const POLICY = `
[defaults]
unknown_agents = "allow"

[tools."payments.refund"]
description = "Each approval is signed with a passkey."
category = "C"
tool_category = "write"
risk = "medium"
step_up = true
`;

/** How the answer is made, for the refusals: what to change before the browser signs. */
type Tweak = 'random-challenge' | 'no-user-verification' | 'none';

/**
 * In the page: fetches the step-up options of proposal `forId` (as the page's script does),
 * changes them as `tweak` says, asks the authenticator, and returns the answer as the form
 * posts it.
 */
async function answer(page: Page, forId: string, tweak: Tweak): Promise<string> {
  return page.evaluate(
    async ({ forId, tweak }) => {
      const fromB64u = (t: string) =>
        Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (t.length % 4)) % 4)), (c) =>
          c.charCodeAt(0),
        ).buffer;
      const toB64u = (b: ArrayBuffer) =>
        btoa(String.fromCharCode(...new Uint8Array(b)))
          .replace(/\+/g, '-')
          .replace(/\//g, '_')
          .replace(/=+$/, '');
      const csrf = (document.querySelector('input[name=csrf_token]') as HTMLInputElement).value;
      const r = await fetch('/fn/passkey_options', {
        method: 'POST',
        headers: { Accept: 'application/json' },
        body: new URLSearchParams({ csrf_token: csrf, id: forId }),
      });
      const publicKey = JSON.parse(await r.json()).publicKey;
      publicKey.challenge = fromB64u(publicKey.challenge);
      if (tweak === 'random-challenge') publicKey.challenge = crypto.getRandomValues(new Uint8Array(32)).buffer;
      if (tweak === 'no-user-verification') publicKey.userVerification = 'discouraged';
      for (const c of publicKey.allowCredentials ?? []) c.id = fromB64u(c.id);
      const cred = (await navigator.credentials.get({ publicKey })) as PublicKeyCredential;
      const res = cred.response as AuthenticatorAssertionResponse;
      return JSON.stringify({
        id: cred.id,
        rawId: toB64u(cred.rawId),
        type: cred.type,
        response: {
          authenticatorData: toB64u(res.authenticatorData),
          clientDataJSON: toB64u(res.clientDataJSON),
          signature: toB64u(res.signature),
          userHandle: res.userHandle ? toB64u(res.userHandle) : null,
        },
      });
    },
    { forId, tweak },
  );
}

/** Posts the page's Approve form with `passkey` as the answer, past the page's script. */
async function approveWith(page: Page, passkey: string): Promise<void> {
  await page.evaluate((passkey) => {
    const form = document.querySelector('form.approve[data-step-up]') as HTMLFormElement;
    (form.elements.namedItem('passkey') as HTMLInputElement).value = passkey;
    form.submit();
  }, passkey);
  await page.waitForLoadState('load');
}

test.describe('passkey step-up', () => {
  let countersign: RunningServer | undefined;

  test.beforeAll(async ({ backend }, workerInfo) => {
    test.setTimeout(180_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-passkey-e2e-'));
    const policyFile = path.join(dir, 'policy.toml');
    writeFileSync(policyFile, POLICY);
    const logFile = path.join(workerInfo.project.outputDir, `server-passkey-${workerInfo.project.name}.log`);
    countersign = await startServer(backend, logFile, { args: ['--policy', policyFile] });
  });

  test.afterAll(async () => {
    await countersign?.stop();
  });

  test('a reviewer registers a passkey and approves a refund with it; forged answers are refused', async ({
    browser,
  }) => {
    if (countersign === undefined) throw new Error('the server did not start');
    // The same server, reached at localhost: the relying party's host.
    const server: ServerInfo = { ...countersign.info, baseURL: countersign.info.baseURL.replace('127.0.0.1', 'localhost') };
    const api = new CountersignApi(server.baseURL, server.agentNames);
    const refund = (amount: number) =>
      api.proposeOk(server.agentToken, {
        tool: { name: 'payments.refund', version: '2026-01' },
        parameters: { charge: `ch_${amount}`, amount },
        compliance_context: { gdpr: false, hipaa: false },
        blast_radius: 'small',
      });
    const [first, second] = [await refund(40), await refund(75)];

    const { context, page } = await newSession(browser, server);
    try {
      const cdp = await context.newCDPSession(page);
      await cdp.send('WebAuthn.enable');
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
      await login(page, server.reviewer);

      // Without a passkey, the page says where to add one.
      await page.goto(`/proposals/${first.id}`);
      await expect(page.getByTestId('step-up-no-passkey')).toBeVisible();
      await expect(page.getByTestId('approve')).toHaveCount(0);
      await page.getByTestId('step-up-no-passkey').getByRole('link').click();
      await expect(page).toHaveURL('/account');

      // Registration.
      await page.getByTestId('passkey-name').fill('Laptop');
      await page.getByTestId('passkey-add').click();
      await expect(page.getByTestId('flash-notice')).toContainText('Passkey added');
      await expect(page.getByTestId('passkey-row-name')).toHaveText('Laptop');
      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
      expect(credentials).toHaveLength(1);

      // Refused: an answer to a challenge the server never gave.
      await page.goto(`/proposals/${first.id}`);
      await approveWith(page, await answer(page, first.id, 'random-challenge'));
      await expect(page.getByTestId('flash-error')).toContainText('not for this request');
      // Refused: the second refund's answer replayed on the first.
      await page.goto(`/proposals/${first.id}`);
      await answer(page, first.id, 'none'); // the first's own challenge, left unanswered
      await approveWith(page, await answer(page, second.id, 'none'));
      await expect(page.getByTestId('flash-error')).toContainText('not for this request');
      // Refused: an answer without user verification.
      await page.goto(`/proposals/${first.id}`);
      await approveWith(page, await answer(page, first.id, 'no-user-verification'));
      await expect(page.getByTestId('flash-error')).toContainText('did not verify');
      await expect(page.getByTestId('proposal-status')).toHaveText('pending');

      // The real thing: Approve asks the passkey, which signs this exact request.
      await page.goto(`/proposals/${first.id}`);
      await expect(page.getByTestId('step-up-note')).toBeVisible();
      await page.getByTestId('approve').click();
      await expect(page.getByTestId('flash-notice')).toContainText('Approved');
      await expect(page.getByTestId('proposal-status')).toHaveText('approved');
      await expect(page.getByTestId('passkey-proof')).toContainText(server.reviewer.username);
      const seen = await api.getProposal(server.agentToken, first.id);
      expect(seen.body?.proposal).toMatchObject({ status: 'approved', authorization_state: 'confirmed' });
      const second_ = await api.getProposal(server.agentToken, second.id);
      expect(second_.body?.proposal).toMatchObject({ status: 'pending' });
    } finally {
      await context.close();
    }
  });
});
