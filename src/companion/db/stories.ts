// Stories of a workspace. Only slugged stories are exposed to devices (spec section 2).
import { randomUUID } from 'node:crypto';
import { noteWrite, nowIso, stmt, type Db } from './database.js';

export interface StoryRow {
  id: string;
  workspace_id: string;
  slug: string | null;
  name: string;
  transcript: string;
  excerpt: string | null;
  age_group: string | null;
  illustration_url: string | null;
  illustration_alt: string | null;
  sort_order: number;
  default_voice_profile_id: string | null;
  created_at: string;
}

export type NewStory = Omit<StoryRow, 'id' | 'created_at'> & { id?: string };

/** Inserts, or replaces the story with the same slug in the workspace (imports are re-runnable). */
export function upsertStory(db: Db, s: NewStory): StoryRow {
  noteWrite();
  const existing = s.slug ? getStoryBySlug(db, s.workspace_id, s.slug) : undefined;
  const row: StoryRow = { ...s, id: existing?.id ?? s.id ?? randomUUID(), created_at: existing?.created_at ?? nowIso() };
  stmt(db,
    `INSERT INTO stories (id, workspace_id, slug, name, transcript, excerpt, age_group, illustration_url, illustration_alt,
       sort_order, default_voice_profile_id, created_at)
     VALUES (@id, @workspace_id, @slug, @name, @transcript, @excerpt, @age_group, @illustration_url, @illustration_alt,
       @sort_order, @default_voice_profile_id, @created_at)
     ON CONFLICT(id) DO UPDATE SET slug = excluded.slug, name = excluded.name, transcript = excluded.transcript,
       excerpt = excluded.excerpt, age_group = excluded.age_group, illustration_url = excluded.illustration_url,
       illustration_alt = excluded.illustration_alt, sort_order = excluded.sort_order,
       default_voice_profile_id = excluded.default_voice_profile_id`,
  ).run(row);
  return row;
}

export function listSluggedStories(db: Db, workspaceId: string): StoryRow[] {
  return stmt(db, `SELECT * FROM stories WHERE workspace_id = ? AND slug IS NOT NULL AND slug <> '' ORDER BY sort_order, name, id`)
    .all(workspaceId) as StoryRow[];
}

export function getStoryBySlug(db: Db, workspaceId: string, slug: string): StoryRow | undefined {
  if (!slug) return undefined;
  return stmt(db, 'SELECT * FROM stories WHERE workspace_id = ? AND slug = ?').get(workspaceId, slug) as StoryRow | undefined;
}
