// A small typed client for the agent and executor JSON API, used to seed proposals and to check
// what agents and executors see. Plain fetch: the browser is not involved.
import { randomBytes, randomUUID } from 'node:crypto';

export type ProposalStatus = 'pending' | 'approved' | 'rejected' | 'succeeded' | 'failed' | 'changes_requested';

/** The seed 004 Tool Proposal as an agent submits it, plus seed 003's blast radius and targets. */
export interface ProposalInput {
  proposal_id: string;
  proposed_by: string;
  timestamp: string;
  domain: string;
  tool: { name: string; version: string };
  intent: { summary: string; reasoning: string };
  parameters: Record<string, unknown>;
  risk_level: 'low' | 'medium' | 'high';
  approval_required: boolean;
  compliance_context: { gdpr: boolean; hipaa: boolean };
  idempotency_key: string;
  rollback_supported: boolean;
  blast_radius: 'tiny' | 'small' | 'medium' | 'large';
  target_refs: { type: string; id: string }[];
  /** Seed 003's optional fields, passed to the executor as given. */
  constraints?: Record<string, unknown>;
  preconditions?: unknown[];
  execution?: {
    execution_slo_ms?: number;
    timeout_ms?: number;
    retry_policy?: { max_retries: number; backoff_ms: number };
  };
  rollback_plan?: { type: 'none' | 'compensate' | 'restore' | 'revert'; instructions?: unknown; timeout_ms?: number };
  /** Countersign's own field: the proposal this one revises after a request for changes. */
  supersedes?: string;
}

/** Top-level fields replace the defaults; `intent` and `tool` may be given in part. */
export type ProposalOverrides = Partial<Omit<ProposalInput, 'intent' | 'tool'>> & {
  intent?: Partial<ProposalInput['intent']>;
  tool?: Partial<ProposalInput['tool']>;
};

export interface Review {
  decision: 'approved' | 'rejected' | 'changes_requested';
  decided_by: string;
  decided_at: string;
  reason: string | null;
}

/** The fields of the agent's view of a proposal that the suite relies on. */
export interface ProposalView {
  id: string;
  status: ProposalStatus;
  authorization_state: string;
  created_at: string;
  review?: Review | null;
  [field: string]: unknown;
}

export interface Command {
  id: string;
  proposal_id: string;
  tool: { name: string; version: string };
  parameters: Record<string, unknown>;
  idempotency_key: string;
  [field: string]: unknown;
}

export interface Lease {
  command: Command;
  lease_token: string;
  lease_expires_at: string;
}

/** One HTTP exchange: the status, the raw body text, and the body parsed as JSON when it is JSON. */
export interface ApiResult<T> {
  status: number;
  text: string;
  body: T | null;
}

/** Bounds for queue loops: far more than one worker ever enqueues, so hitting one is a bug. */
const MAX_LEASES = 100;

export class CountersignApi {
  constructor(
    private readonly baseURL: string,
    private readonly agentNames: Readonly<Record<string, string>>,
  ) {}

  /** A complete, valid proposal; every test gets its own id, summary, reasoning and key. */
  static proposalBody(proposedBy: string, overrides: ProposalOverrides = {}): ProposalInput {
    const tag = randomBytes(4).toString('hex');
    const { intent, tool, ...rest } = overrides;
    return {
      proposal_id: randomUUID(),
      proposed_by: proposedBy,
      timestamp: new Date().toISOString(),
      domain: 'sales',
      parameters: { contact_id: 'c-123', email: 'new@example.com' },
      risk_level: 'medium',
      approval_required: true,
      compliance_context: { gdpr: true, hipaa: false },
      idempotency_key: `e2e-${tag}-${randomUUID()}`,
      rollback_supported: true,
      blast_radius: 'small',
      target_refs: [{ type: 'crm_contact', id: 'c-123' }],
      ...rest,
      tool: { name: 'crm.update_contact', version: '2024-01', ...tool },
      intent: {
        summary: `Update contact c-123 email [e2e ${tag}]`,
        reasoning: `The customer asked by ticket T-${tag} to change the address on file.`,
        ...intent,
      },
    };
  }

  /** POST /api/v1/proposals. `proposed_by` defaults to the token's own agent name. */
  async propose(
    token: string,
    overrides: ProposalOverrides = {},
  ): Promise<ApiResult<{ proposal: ProposalView }> & { input: ProposalInput }> {
    const proposedBy = this.agentNames[token];
    if (proposedBy === undefined && overrides.proposed_by === undefined) {
      throw new Error('propose(): unknown agent token and no proposed_by override');
    }
    const input = CountersignApi.proposalBody(proposedBy ?? '', overrides);
    const res = await this.call<{ proposal: ProposalView }>('POST', '/api/v1/proposals', token, input);
    return { ...res, input };
  }

  /** Seeds a proposal and fails loudly unless the server accepted it as pending. */
  async proposeOk(token: string, overrides: ProposalOverrides = {}): Promise<{ id: string; input: ProposalInput }> {
    const res = await this.propose(token, overrides);
    const proposal = res.body?.proposal;
    if (res.status !== 201 || proposal === undefined || proposal.status !== 'pending') {
      throw new Error(`seeding a proposal failed: ${res.status} ${res.text}`);
    }
    return { id: proposal.id, input: res.input };
  }

  getProposal(token: string, id: string): Promise<ApiResult<{ proposal: ProposalView }>> {
    return this.call('GET', `/api/v1/proposals/${encodeURIComponent(id)}`, token);
  }

  /** POST /api/v1/executor/lease: 200 with a lease, or 204 when nothing is queued. */
  lease(executorToken: string): Promise<ApiResult<Lease>> {
    return this.call('POST', '/api/v1/executor/lease', executorToken, {});
  }

  complete(
    executorToken: string,
    commandId: string,
    leaseToken: string,
    result: Record<string, unknown>,
  ): Promise<ApiResult<unknown>> {
    return this.call('POST', `/api/v1/executor/commands/${encodeURIComponent(commandId)}/complete`, executorToken, {
      lease_token: leaseToken,
      result,
    });
  }

  fail(
    executorToken: string,
    commandId: string,
    leaseToken: string,
    error: Record<string, unknown>,
    sideEffect: 'none' | 'possible' | 'done' = 'possible',
  ): Promise<ApiResult<unknown>> {
    return this.call('POST', `/api/v1/executor/commands/${encodeURIComponent(commandId)}/fail`, executorToken, {
      lease_token: leaseToken,
      error,
      side_effect: sideEffect,
    });
  }

  /**
   * Leases until the command for `proposalId` comes up. Tests in one worker share a server, so
   * an earlier test may have left approved commands queued; those are completed on the way so
   * they cannot come back after their lease expires. Returns null when the queue runs dry.
   */
  async leaseCommandFor(executorToken: string, proposalId: string): Promise<Lease | null> {
    for (let i = 0; i < MAX_LEASES; i++) {
      const lease = await this.leaseOne(executorToken);
      if (lease === null) return null;
      if (lease.command.proposal_id === proposalId) return lease;
      await this.completeOk(executorToken, lease, { drained_by: 'e2e' });
    }
    throw new Error(`leased ${MAX_LEASES} commands without finding proposal ${proposalId}`);
  }

  /** leaseCommandFor, for a proposal that must have a queued command. */
  async mustLeaseCommandFor(executorToken: string, proposalId: string): Promise<Lease> {
    const lease = await this.leaseCommandFor(executorToken, proposalId);
    if (lease === null) throw new Error(`no command was queued for proposal ${proposalId}`);
    return lease;
  }

  /** Leases and completes everything queued until lease answers 204; returns what it leased. */
  async drainCommands(executorToken: string): Promise<Lease[]> {
    const drained: Lease[] = [];
    for (let i = 0; i < MAX_LEASES; i++) {
      const lease = await this.leaseOne(executorToken);
      if (lease === null) return drained;
      drained.push(lease);
      await this.completeOk(executorToken, lease, { drained_by: 'e2e' });
    }
    throw new Error(`the executor queue still had commands after ${MAX_LEASES} leases`);
  }

  private async leaseOne(executorToken: string): Promise<Lease | null> {
    const res = await this.lease(executorToken);
    if (res.status === 204) return null;
    if (res.status !== 200 || res.body === null) {
      throw new Error(`lease answered ${res.status} ${res.text}`);
    }
    return res.body;
  }

  private async completeOk(executorToken: string, lease: Lease, result: Record<string, unknown>): Promise<void> {
    const res = await this.complete(executorToken, lease.command.id, lease.lease_token, result);
    if (res.status !== 200) {
      throw new Error(`completing command ${lease.command.id} answered ${res.status} ${res.text}`);
    }
  }

  private async call<T>(method: 'GET' | 'POST', path: string, token: string, body?: unknown): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.baseURL}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let parsed: T | null = null;
    if (text !== '' && (res.headers.get('content-type') ?? '').includes('json')) {
      parsed = JSON.parse(text) as T;
    }
    return { status: res.status, text, body: parsed };
  }
}
