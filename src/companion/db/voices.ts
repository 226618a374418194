// Voice profiles: workspace voices (made by an administrator) and clones (made by one client, visible to it only).
import type { VoiceParams } from '../speech/synthesizer.js';
import { noteWrite, nowIso, stmt, type Db } from './database.js';

export type VoiceCategory = 'cloned' | 'workspace';

export interface VoiceRow {
  id: string;
  workspace_id: string;
  name: string;
  category: VoiceCategory;
  created_by_client: string | null;
  status: string;
  description: string;
  language: string;
  params_json: string;
  design_prompt: string | null;
  reference_text: string | null;
  adapter_profile_id: string | null;
  voice_clone_prompt_path: string | null;
  reference_audio_path: string | null;
  created_at: string;
}

export type NewVoice = Omit<VoiceRow, 'created_at' | 'status'> & { status?: string };

export interface VoiceCard {
  id: string;
  name: string;
  category: VoiceCategory;
  reference_audio_path: string | null;
}

/** The fields of the voice list (GET /voices), same visibility and order as listVisibleVoices. */
export function listVisibleVoiceCards(db: Db, workspaceId: string, clientId: string): VoiceCard[] {
  return stmt(
    db,
    `SELECT id, name, category, reference_audio_path FROM voices
     WHERE workspace_id = ? AND (category = 'workspace' OR created_by_client = ?) ORDER BY created_at, rowid`,
  ).all(workspaceId, clientId) as VoiceCard[];
}

export function insertVoice(db: Db, v: NewVoice): VoiceRow {
  noteWrite();
  const row: VoiceRow = { status: 'ready', ...v, created_at: nowIso() };
  stmt(db,
    `INSERT INTO voices (id, workspace_id, name, category, created_by_client, status, description, language, params_json,
       design_prompt, reference_text, adapter_profile_id, voice_clone_prompt_path, reference_audio_path, created_at)
     VALUES (@id, @workspace_id, @name, @category, @created_by_client, @status, @description, @language, @params_json,
       @design_prompt, @reference_text, @adapter_profile_id, @voice_clone_prompt_path, @reference_audio_path, @created_at)`,
  ).run(row);
  return row;
}

export function getVoice(db: Db, id: string): VoiceRow | undefined {
  return stmt(db, 'SELECT * FROM voices WHERE id = ?').get(id.toLowerCase()) as VoiceRow | undefined;
}

/** Workspace voices plus the clones of this client, oldest first (spec section 2, visibility). */
export function listVisibleVoices(db: Db, workspaceId: string, clientId: string): VoiceRow[] {
  return stmt(db,
      `SELECT * FROM voices WHERE workspace_id = ? AND (category = 'workspace' OR created_by_client = ?)
       ORDER BY created_at, rowid`,
    )
    .all(workspaceId, clientId) as VoiceRow[];
}

/** The workspace's first voice (oldest workspace voice, else oldest voice), for narration without a choice. */
export function firstWorkspaceVoice(db: Db, workspaceId: string): VoiceRow | undefined {
  return stmt(db, `SELECT * FROM voices WHERE workspace_id = ? ORDER BY category = 'workspace' DESC, created_at, rowid LIMIT 1`)
    .get(workspaceId) as VoiceRow | undefined;
}

export function setAdapterProfile(db: Db, id: string, profileId: string): void {
  noteWrite();
  stmt(db, 'UPDATE voices SET adapter_profile_id = ? WHERE id = ?').run(profileId, id);
}

export function listWorkspaceVoices(db: Db, workspaceId: string): VoiceRow[] {
  return stmt(db, 'SELECT * FROM voices WHERE workspace_id = ? ORDER BY created_at, rowid').all(workspaceId) as VoiceRow[];
}

export function voiceParams(row: VoiceRow): VoiceParams {
  return JSON.parse(row.params_json) as VoiceParams;
}

/** A clone is usable only by the client that made it; workspace voices by every client of the workspace. */
export function isVisibleTo(row: VoiceRow, workspaceId: string, clientId: string): boolean {
  return row.workspace_id === workspaceId && (row.category === 'workspace' || row.created_by_client === clientId);
}

/** Every stored file a voice row refers to (relative to the audio directory). */
export function listVoiceFilePaths(db: Db): string[] {
  const rows = stmt(db, 'SELECT reference_audio_path AS a, voice_clone_prompt_path AS b FROM voices')
    .all() as Array<{ a: string | null; b: string | null }>;
  return rows.flatMap((r) => [r.a, r.b].filter((x): x is string => !!x));
}

export function setReferenceAudio(db: Db, id: string, relPath: string, text: string): boolean {
  noteWrite();
  return (
    stmt(db, 'UPDATE voices SET reference_audio_path = ?, reference_text = ? WHERE id = ? AND reference_audio_path IS NULL')
      .run(relPath, text, id).changes === 1
  );
}

export function voicesWithoutReferenceAudio(db: Db): VoiceRow[] {
  return stmt(db, 'SELECT * FROM voices WHERE reference_audio_path IS NULL ORDER BY created_at').all() as VoiceRow[];
}
