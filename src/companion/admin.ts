// Administration of the companion's store, behind `speaker-agent companion workspace|client|voice|story ...`
// (wired into the CLI elsewhere) and the README's seeding step. Plain functions over the database: they do
// not start the server or the speech engines (a voice added here gets its preview audio when the server
// next starts).
import { randomUUID } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fingerprint, generateWorkspaceKey, sha256Hex } from './auth/secrets.js';
import { listClients, resetClientSecret, setClientStatus, getClient, type ClientRow } from './db/clients.js';
import { openDatabase, type Db } from './db/database.js';
import { upsertStory, type StoryRow } from './db/stories.js';
import { getVoice, insertVoice, listWorkspaceVoices, type VoiceRow } from './db/voices.js';
import { createWorkspace, findWorkspaceByName, getWorkspace, listWorkspaces, type WorkspaceRow } from './db/workspaces.js';
import { isSpeechError } from './speech/speechError.js';
import { designVoice } from './speech/voiceDesign.js';
import { DEFAULT_STORIES, DEFAULT_VOICES } from './seedContent.js';
import { StoryImportSchema } from './storyImport.js';
import { CodedError } from '../common/errors.js';
import { adoptDirectoryOwnerTree } from '../common/atomicFile.js';
import { jsonSyntaxError } from '../common/jsonSyntax.js';

export class AdminError extends CodedError<'NOT_FOUND' | 'INVALID_INPUT' | 'CONFLICT'> {
  override name = 'AdminError';
}

export const DEFAULT_WORKSPACE_NAME = 'default';
export const DEFAULT_KEY_FILE = 'default-workspace.key';

export interface WorkspaceSummary {
  id: string;
  name: string;
  /** first characters of the key's SHA-256 (never the key) */
  keyFingerprint: string;
  createdAt: string;
  clients: number;
  voices: number;
}

export interface ClientSummary {
  id: string;
  workspaceId: string;
  status: string;
  enrolled: boolean;
  enrolledAt: string;
  lastSeenAt: string;
}


/** The admin operations over one data directory. */
export class CompanionAdmin {
  readonly db: Db;

  constructor(readonly dataDir: string) {
    this.db = openDatabase(dataDir);
    adoptDirectoryOwnerTree(dataDir); // the database (and its -wal/-shm) a root command just created
  }

  /** Run as root (`sudo speaker-agent companion ...` on a speaker), what the command wrote in the service's data
   *  directory takes the directory's owner: left root's, the service could not open its database or key files
   *  and stopped at every start. */
  close(): void {
    this.db.close();
    adoptDirectoryOwnerTree(this.dataDir);
  }

  /** Creates a workspace; the returned key is shown once (only its hash is stored). */
  createWorkspace(name: string): { workspace: WorkspaceSummary; key: string } {
    const n = name.trim();
    if (!n || n.length > 100) throw new AdminError('INVALID_INPUT', 'a workspace name of 1..100 characters is required');
    const key = generateWorkspaceKey();
    const row = createWorkspace(this.db, n, sha256Hex(key));
    return { workspace: this.summary(row), key };
  }

  listWorkspaces(): WorkspaceSummary[] {
    return listWorkspaces(this.db).map((w) => this.summary(w));
  }

  private summary(w: WorkspaceRow): WorkspaceSummary {
    const count = (table: string) => (this.db.prepare(`SELECT count(*) AS n FROM ${table} WHERE workspace_id = ?`).get(w.id) as { n: number }).n;
    return { id: w.id, name: w.name, keyFingerprint: w.key_hash.slice(0, 12), createdAt: w.created_at, clients: count('clients'), voices: count('voices') };
  }

  /** A workspace by id or by name. */
  workspace(ref: string): WorkspaceRow {
    const w = getWorkspace(this.db, ref) ?? findWorkspaceByName(this.db, ref);
    if (!w) throw new AdminError('NOT_FOUND', `no workspace '${ref}'`);
    return w;
  }

  listClients(workspaceRef?: string): ClientSummary[] {
    const ws = workspaceRef ? this.workspace(workspaceRef).id : undefined;
    return listClients(this.db, ws).map(clientSummary);
  }

  disableClient(clientId: string): ClientSummary {
    return this.clientOp(clientId, (id) => setClientStatus(this.db, id, 'disabled'));
  }

  enableClient(clientId: string): ClientSummary {
    return this.clientOp(clientId, (id) => setClientStatus(this.db, id, 'active'));
  }

  /** Forgets the client's enrolled secret: its next request (with its workspace's key) enrolls a new one.
   *  The recovery for a device that lost its secret. */
  resetClient(clientId: string): ClientSummary {
    return this.clientOp(clientId, (id) => resetClientSecret(this.db, id));
  }

  private clientOp(clientId: string, op: (id: string) => boolean): ClientSummary {
    const id = clientId.trim().toLowerCase();
    if (!op(id)) throw new AdminError('NOT_FOUND', `no client ${clientId}`);
    return clientSummary(getClient(this.db, id)!);
  }

  /** Adds a workspace voice (category workspace) designed from a description. */
  addWorkspaceVoice(opts: { workspace: string; name: string; design: string; language?: string; description?: string }): VoiceRow {
    const ws = this.workspace(opts.workspace);
    const name = opts.name.trim();
    if (!name || name.length > 100) throw new AdminError('INVALID_INPUT', 'a voice name of 1..100 characters is required');
    let params;
    try {
      const { traits: _traits, ...p } = designVoice(opts.design, opts.language);
      params = p;
    } catch (err) {
      if (isSpeechError(err)) throw new AdminError('INVALID_INPUT', `cannot design a voice from '${opts.design}': ${err.message}`, { cause: err });
      throw err;
    }
    return insertVoice(this.db, {
      id: randomUUID(),
      workspace_id: ws.id,
      name,
      category: 'workspace',
      created_by_client: null,
      description: opts.description ?? opts.design,
      language: params.language,
      params_json: JSON.stringify(params),
      design_prompt: opts.design,
      reference_text: null,
      adapter_profile_id: null,
      voice_clone_prompt_path: null,
      reference_audio_path: null,
    });
  }

  listVoices(workspaceRef: string): VoiceRow[] {
    return listWorkspaceVoices(this.db, this.workspace(workspaceRef).id);
  }

  /** Imports stories (a JSON array, or {stories:[...]}) into a workspace, all or none; re-importing a slug
   *  replaces that story. default_voice is a voice id or a workspace voice's name. */
  importStories(workspaceRef: string, input: unknown): StoryRow[] {
    const ws = this.workspace(workspaceRef);
    const list = Array.isArray(input) ? input : (input as { stories?: unknown })?.stories;
    if (!Array.isArray(list)) throw new AdminError('INVALID_INPUT', 'a story file holds a JSON array of stories (or {"stories": [...]})');
    const parsed = list.map((raw, i) => {
      const r = StoryImportSchema.safeParse(raw);
      if (!r.success) {
        throw new AdminError('INVALID_INPUT', `story ${i + 1}: ${r.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`);
      }
      return r.data;
    });
    const voices = listWorkspaceVoices(this.db, ws.id);
    const resolveVoice = (ref: string | null | undefined): string | null => {
      if (!ref) return null;
      const v = voices.find((x) => x.id === ref.toLowerCase()) ?? voices.find((x) => x.name === ref && x.category === 'workspace');
      if (!v) throw new AdminError('NOT_FOUND', `default voice '${ref}' is not a voice of workspace '${ws.name}'`);
      return v.id;
    };
    return this.db.transaction(() =>
      parsed.map((s, i) =>
        upsertStory(this.db, {
          workspace_id: ws.id,
          slug: s.slug ?? null,
          name: s.name,
          transcript: s.transcript,
          excerpt: s.excerpt ?? null,
          age_group: s.age_group ?? null,
          illustration_url: s.illustration_url ?? null,
          illustration_alt: s.illustration_alt ?? null,
          sort_order: s.sort_order ?? i,
          default_voice_profile_id: resolveVoice(s.default_voice),
        }),
      ),
    );
  }

  importStoriesFile(workspaceRef: string, file: string): StoryRow[] {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new AdminError('INVALID_INPUT', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      throw new AdminError('INVALID_INPUT', `cannot read ${file}: ${jsonSyntaxError(err, text)}`, { cause: err });
    }
    return this.importStories(workspaceRef, data);
  }

  getVoice(id: string): VoiceRow | undefined {
    return getVoice(this.db, id);
  }
}

function clientSummary(c: ClientRow): ClientSummary {
  return {
    id: c.id,
    workspaceId: c.workspace_id,
    status: c.status,
    enrolled: c.secret_hash !== null,
    enrolledAt: c.enrolled_at,
    lastSeenAt: c.last_seen_at,
  };
}

export interface SeedResult {
  workspaceId: string;
  /** the default workspace's key (also in <dataDir>/default-workspace.key, mode 0600) */
  key: string;
  keyFile: string;
  created: boolean;
}

/** Creates the default workspace for local use (key kept in <dataDir>/default-workspace.key), with a few
 *  workspace voices and stories. Idempotent: an existing default workspace is left as it is. */
export function seedDefaults(dataDir: string): SeedResult {
  const admin = new CompanionAdmin(dataDir);
  const keyFile = path.join(dataDir, DEFAULT_KEY_FILE);
  try {
    const existing = findWorkspaceByName(admin.db, DEFAULT_WORKSPACE_NAME);
    if (existing) {
      let key = '';
      try {
        key = readFileSync(keyFile, 'utf8').trim();
      } catch {
        /* removed by the admin */
      }
      if (key && sha256Hex(key) === existing.key_hash) return { workspaceId: existing.id, key, keyFile, created: false };
      throw new AdminError('CONFLICT', `the default workspace exists but ${keyFile} does not hold its key; create a new workspace instead`);
    }
    return admin.db.transaction(() => {
      const { workspace, key } = admin.createWorkspace(DEFAULT_WORKSPACE_NAME);
      const voiceIds = DEFAULT_VOICES.map((v) => admin.addWorkspaceVoice({ workspace: workspace.id, ...v }).id);
      admin.importStories(
        workspace.id,
        DEFAULT_STORIES.map((s, i) => ({ ...s, default_voice: voiceIds[i % voiceIds.length] })),
      );
      writeFileSync(keyFile, key + '\n', { mode: 0o600 });
      chmodSync(keyFile, 0o600);
      return { workspaceId: workspace.id, key, keyFile, created: true };
    });
  } finally {
    admin.close();
  }
}

export { fingerprint };
