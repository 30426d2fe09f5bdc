// The MCP gateway end to end: an agent built on the official MCP TypeScript SDK, pointed at
// Countersign's /mcp/gateway instead of its tool server, with the reference filesystem server
// (`@modelcontextprotocol/server-filesystem`, stdio, installed by `scripts/setup --test`) behind
// it. A read the policy accepts answers at once; a write is held, the file does not exist, a
// reviewer approves it in Chromium, and then the file holds exactly the approved content and the
// agent's call answers the upstream's result. A rejected write never touches the disk.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser, Page } from '@playwright/test';

import { expect, login, newSession, openQueue, queueRow, test } from './fixtures';
import { REPO_ROOT, startServer, type RunningServer, type ServerInfo } from './server';

const FILESYSTEM_SERVER = path.join(REPO_ROOT, '.tools', 'mcp-servers', 'node_modules', '.bin', 'mcp-server-filesystem');
const UP_TIMEOUT_MS = 60_000;
/** A held call stays open this long; the agent's own timeout is longer. */
const HOLD = '120s';
const CALL_TIMEOUT_MS = 150_000;

// A policy file refuses agents it does not name: the worker's agent owns the upstream's domain.
const POLICY = `
[agents."agent-e2e"]
description = "The end-to-end agent, behind the gateway."
domains = ["files"]

[tools."files.read_text_file"]
description = "Reading a shared file changes nothing."
category = "A"
tool_category = "public_read"
risk = "low"

[tools."files.*"]
category = "C"
tool_category = "write"
`;

type CallResult = Awaited<ReturnType<Client['callTool']>>;

/** The text blocks of a tool result, joined. */
function text(result: CallResult): string {
  const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
  return content.map((c) => c.text ?? '').join('\n');
}

/** An agent on the TypeScript SDK, connected to the gateway with its bearer token. */
async function connectAgent(baseURL: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseURL}/mcp/gateway`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'e2e-gateway-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Runs `body` with an agent connected to the gateway and a reviewer signed in, in a browser
 * session of their own; closes both however it ends. */
async function agentAndReviewer(
  browser: Browser,
  info: ServerInfo,
  body: (agent: Client, page: Page) => Promise<void>,
): Promise<void> {
  const agent = await connectAgent(info.baseURL, info.agentToken);
  const { context, page } = await newSession(browser, info);
  try {
    await login(page, info.reviewer);
    await body(agent, page);
  } finally {
    await context.close();
    await agent.close();
  }
}

/** Once the gateway's upstream is up (/healthz lists its state). */
async function upstreamUp(baseURL: string): Promise<void> {
  await expect
    .poll(
      async () => {
        const health = (await (await fetch(`${baseURL}/healthz`)).json()) as { gateway?: Record<string, string> };
        return health.gateway?.files;
      },
      { timeout: UP_TIMEOUT_MS },
    )
    .toBe('up');
}

/** The id of the newest pending proposal for `tool` in the reviewer's queue. */
async function heldProposal(page: Page, tool: string): Promise<string> {
  await expect
    .poll(
      async () => {
        await openQueue(page);
        return page.locator('[data-testid=queue-row]', { hasText: tool }).count();
      },
      { timeout: 30_000 },
    )
    .toBeGreaterThan(0);
  const id = await page.locator('[data-testid=queue-row]', { hasText: tool }).first().getAttribute('data-proposal-id');
  if (id === null) throw new Error('the queue row has no proposal id');
  return id;
}

test.describe('the MCP gateway', () => {
  let countersign: RunningServer | undefined;
  let share = '';

  test.beforeAll(async ({ backend }, workerInfo) => {
    test.setTimeout(180_000);
    if (!existsSync(FILESYSTEM_SERVER)) {
      throw new Error(`${FILESYSTEM_SERVER} is missing: run \`scripts/setup --test\` (it installs the reference MCP servers)`);
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-gateway-e2e-'));
    share = mkdtempSync(path.join(tmpdir(), 'cs-gateway-share-'));
    writeFileSync(path.join(share, 'readme.txt'), 'shared notes\n');
    const gatewayFile = path.join(dir, 'gateway.toml');
    writeFileSync(
      gatewayFile,
      `[upstreams.files]\ncommand = [${JSON.stringify(FILESYSTEM_SERVER)}, ${JSON.stringify(share)}]\n` +
        `domain = "files"\nhold = "${HOLD}"\n`,
    );
    const policyFile = path.join(dir, 'policy.toml');
    writeFileSync(policyFile, POLICY);
    const logFile = path.join(workerInfo.project.outputDir, `server-gateway-${workerInfo.project.name}.log`);
    countersign = await startServer(backend, logFile, { args: ['--gateway', gatewayFile, '--policy', policyFile] });
    await upstreamUp(countersign.info.baseURL);
  });

  test.afterAll(async () => {
    await countersign?.stop();
  });

  function server(): RunningServer['info'] {
    if (countersign === undefined) throw new Error('the gateway server did not start');
    return countersign.info;
  }

  test('a read runs at once; a write waits for a reviewer in Chromium and runs exactly as approved', async ({
    browser,
  }) => {
    test.setTimeout(240_000);
    await agentAndReviewer(browser, server(), async (agent, page) => {
      const { tools } = await agent.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toContain('files__write_file');
      expect(names).toContain('countersign_wait_for_decision');

      // Category A: no person in the loop, the upstream's own answer.
      const read = await agent.callTool({ name: 'files__read_text_file', arguments: { path: path.join(share, 'readme.txt') } });
      expect(read.isError ?? false).toBe(false);
      expect(text(read)).toContain('shared notes');

      // An agent the policy does not name is not offered the tools it would be refused, and a
      // call made all the same is refused in words the model reads.
      const stranger = await connectAgent(server().baseURL, server().otherAgentToken);
      try {
        const offered = (await stranger.listTools()).tools.map((t) => t.name);
        expect(offered).toEqual(['countersign_wait_for_decision']);
        const refused = await stranger.callTool({ name: 'files__read_text_file', arguments: { path: path.join(share, 'readme.txt') } });
        expect(refused.isError).toBe(true);
        expect(text(refused)).toContain('policy refuses');
      } finally {
        await stranger.close();
      }

      // A write is held: the request stays open while nothing touches the disk.
      const target = path.join(share, 'approved.txt');
      const content = 'exactly these bytes\nline two\n';
      const call = agent.callTool(
        { name: 'files__write_file', arguments: { path: target, content } },
        undefined,
        { timeout: CALL_TIMEOUT_MS },
      );
      const id = await heldProposal(page, 'files.write_file');
      expect(existsSync(target)).toBe(false);

      // The reviewer reads what will run: the tool, the exact content, the tool's definition.
      await queueRow(page, id).getByRole('link').first().click();
      await expect(page).toHaveURL(`/proposals/${id}`);
      await expect(page.getByTestId('proposal-status')).toHaveText('pending');
      await expect(page.locator('main')).toContainText('files.write_file');
      await expect(page.locator('main')).toContainText('exactly these bytes');
      await expect(page.getByTestId('tool-description')).toHaveText(/\S/);
      // The tool's annotations say it may destroy: high risk, so the reviewer types its target.
      await expect(page.getByTestId('proposal-risk')).toContainText('high');
      await page.getByTestId('confirm-input').fill(await page.getByTestId('confirm-name').innerText());
      await page.locator('button[data-testid=approve]').click();
      await expect(page.getByTestId('proposal-authorization')).toHaveText('confirmed');

      // The held call answers the upstream's result once the built-in executor has run it.
      const written = await call;
      expect(written.isError ?? false).toBe(false);
      expect(text(written)).toMatch(/wrote|success/i);
      expect(readFileSync(target, 'utf8')).toBe(content);
      await page.reload();
      await expect(page.getByTestId('proposal-status')).toHaveText('succeeded');
    });
  });

  test('a rejected write never touches the disk; the agent reads the reason', async ({ browser }) => {
    test.setTimeout(240_000);
    await agentAndReviewer(browser, server(), async (agent, page) => {
      const target = path.join(share, 'rejected.txt');
      const call = agent.callTool(
        { name: 'files__write_file', arguments: { path: target, content: 'never written' } },
        undefined,
        { timeout: CALL_TIMEOUT_MS },
      );
      const id = await heldProposal(page, 'files.write_file');
      await page.goto(`/proposals/${id}`);
      await page.locator('form.reject textarea[name=reason]').fill('not in the shared folder, please');
      await page.locator('button[data-testid=reject]').click();
      await expect(page.getByTestId('proposal-status')).toHaveText('rejected');
      const answered = await call;
      expect(answered.isError).toBe(true);
      expect(text(answered)).toContain('not in the shared folder, please');
      expect(existsSync(target)).toBe(false);
    });
  });
});
