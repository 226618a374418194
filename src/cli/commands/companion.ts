// `speaker-agent companion`: the companion server (an offline Voice Assistant Service) and its administration:
// workspaces (keys), clients (TOFU resets), voices and stories. The server sends READY/WATCHDOG/STOPPING to
// systemd like the agent (systemd/speaker-agent-companion.service).
import type { Command } from 'commander';
import { AgentError } from '../../agent/errors.js';
import { exitNow } from '../../common/exitNow.js';
import { createLogger } from '../../common/logger.js';
import { startMemoryKeeper } from '../../common/memoryKeeper.js';
import { createSdNotifier, startWatchdog } from '../../common/sdNotify.js';
import { emit, printLine, table } from '../output.js';
import { stdoutFd } from '../stdio.js';
import { numberIn } from '../numberOption.js';
import { markServiceStart } from '../startFailureHold.js';

interface DataDirOpt {
  dataDir?: string;
  json?: boolean;
}

async function companionModules() {
  const [settings, admin] = await Promise.all([import('../../companion/settings.js'), import('../../companion/admin.js')]);
  return { ...settings, ...admin };
}

/** The data directory: --data-dir, else SPEAKER_AGENT_COMPANION_DATA_DIR, $STATE_DIRECTORY or ~/.local/share. */
async function dataDirOf(o: DataDirOpt): Promise<string> {
  const m = await companionModules();
  return o.dataDir ?? m.loadCompanionSettings({}).dataDir;
}

/** Runs an admin operation, turning the companion's typed errors into CLI errors (usage / config). */
async function withAdmin<T>(o: DataDirOpt, fn: (admin: InstanceType<Awaited<ReturnType<typeof companionModules>>['CompanionAdmin']>) => T): Promise<T> {
  const m = await companionModules();
  const { mkdirSync } = await import('node:fs');
  const dir = await dataDirOf(o);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const admin = new m.CompanionAdmin(dir);
  try {
    return fn(admin);
  } catch (err) {
    if (err instanceof m.AdminError) throw new AgentError(err.code === 'INVALID_INPUT' ? 'usage' : 'config_invalid', err.message, { cause: err });
    throw err;
  } finally {
    admin.close();
  }
}

const dataDirOption = (c: Command) => c.option('--data-dir <dir>', 'companion data directory').option('--json', 'print JSON');

export function registerCompanion(program: Command): void {
  const companion = program
    .command('companion')
    .description('the companion server (offline voice assistant service) and its administration')
    .addHelpText(
      'after',
      `
Examples:
  speaker-agent companion --port 8787 --host 0.0.0.0      # serve the LAN
  speaker-agent companion workspace ensure-default --print-key
  speaker-agent companion workspace create kitchen --json
  speaker-agent companion client reset 3f0c...           # let a device that lost its secret enroll again
  speaker-agent companion voice design --workspace default --name Calm --design "a calm low male voice"
  speaker-agent companion story import --workspace default stories.json`,
    );

  dataDirOption(
    companion
      .command('serve', { isDefault: true })
      .description('run the companion server (default subcommand)')
      .option('--host <addr>', 'listen address (default 127.0.0.1; 0.0.0.0 for the LAN)')
      .option('--port <n>', 'listen port (default 8787; 0 = any free port)', numberIn(0, 65_535, { integer: true })),
  ).action(async (o: DataDirOpt & { host?: string; port?: number }) => {
    markServiceStart(); // a failure before it serves is held under systemd (startFailureHold.ts)
    const m = await companionModules();
    const { startCompanionServer } = await import('../../companion/server.js');
    const settings = m.loadCompanionSettings({ ...(o.host ? { host: o.host } : {}), ...(o.port !== undefined ? { port: o.port } : {}), ...(o.dataDir ? { dataDir: o.dataDir } : {}) });
    const logger = createLogger({ level: settings.log.level, name: 'companion', destination: stdoutFd() });
    const notifier = createSdNotifier(process.env, { onError: (e) => logger.warn({ err: e.message }, 'sd_notify failed') });
    m.seedDefaults(settings.dataDir);
    const server = await startCompanionServer(settings, { logger });
    notifier.ready(`serving ${server.url}`);
    logger.info({ url: server.url, dataDir: settings.dataDir, systemd: notifier.enabled }, 'companion server ready');
    if (o.json) printLine(JSON.stringify({ url: server.url, port: server.port, dataDir: settings.dataDir }));
    const wd = notifier.watchdogIntervalMs ? startWatchdog(notifier, { intervalMs: notifier.watchdogIntervalMs }) : undefined;
    // A burst of large uploads leaves freed Buffers for V8 to collect and their memory in malloc's arenas, none of
    // it on the JS heap the agent's keeper watches: here the keeper watches resident memory and, once it has grown
    // 8 MB since the last collection, collects and hands malloc's free memory back (issue 17: back to rest after
    // a burst of uploads).
    const keeper = startMemoryKeeper({ logger, heapUsed: () => process.memoryUsage.rss(), growthBytes: 8 * 1024 * 1024 });
    await new Promise<void>((resolve) => {
      const stop = (sig: string) => {
        logger.info({ signal: sig }, 'companion server stopping');
        notifier.stopping();
        wd?.stop();
        keeper.stop();
        // not process.exit: what is stuck may be a speech thread inside a native call (src/common/exitNow.ts)
        const deadline = setTimeout(() => void exitNow(1), 1800);
        deadline.unref();
        server.close().finally(() => {
          clearTimeout(deadline);
          notifier.close();
          resolve();
        });
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    });
  });

  // ---- workspaces ----
  const ws = companion.command('workspace').description('workspaces and their keys');
  dataDirOption(ws.command('list').description('list workspaces (key fingerprints, never keys)')).action(async (o: DataDirOpt) => {
    const list = await withAdmin(o, (a) => a.listWorkspaces());
    emit(o, { workspaces: list }, (r) => table(['id', 'name', 'key', 'clients', 'voices'], r.workspaces.map((w) => [w.id, w.name, w.keyFingerprint, String(w.clients), String(w.voices)])));
  });
  dataDirOption(ws.command('create').description('create a workspace; its key is printed once').argument('<name>')).action(async (name: string, o: DataDirOpt) => {
    const r = await withAdmin(o, (a) => a.createWorkspace(name));
    emit(o, r, (x) => `workspace ${x.workspace.name} (${x.workspace.id})\nkey: ${x.key}\nThe key is shown only now: give it to the devices (speaker-agent enroll --workspace-key ...).`);
  });
  dataDirOption(
    ws
      .command('ensure-default')
      .description('create the default workspace with sample voices and stories, if missing')
      .option('--print-key', 'print only the default workspace key (for scripts)'),
  ).action(async (o: DataDirOpt & { printKey?: boolean }) => {
    const m = await companionModules();
    const dir = await dataDirOf(o);
    (await import('node:fs')).mkdirSync(dir, { recursive: true, mode: 0o700 });
    let r;
    try {
      r = m.seedDefaults(dir);
    } catch (err) {
      if (err instanceof m.AdminError) throw new AgentError('config_invalid', err.message, { cause: err });
      throw err;
    }
    if (o.printKey) return printLine(r.key);
    emit(o, { workspaceId: r.workspaceId, keyFile: r.keyFile, created: r.created }, (x) =>
      `${x.created ? 'created' : 'kept'} the default workspace ${x.workspaceId}; its key is in ${x.keyFile}`,
    );
  });

  // ---- clients ----
  const cl = companion.command('client').description('devices (clients) and their trust-on-first-use state');
  dataDirOption(cl.command('list').description('list clients').option('--workspace <ref>', 'only this workspace (id or name)')).action(
    async (o: DataDirOpt & { workspace?: string }) => {
      const list = await withAdmin(o, (a) => a.listClients(o.workspace));
      emit(o, { clients: list }, (r) => table(['client id', 'status', 'enrolled', 'last seen'], r.clients.map((c) => [c.id, c.status, c.enrolled ? 'yes' : 'no', c.lastSeenAt ?? ''])));
    },
  );
  for (const [verb, what] of [
    ['reset', 'forget the enrolled secret: the device enrolls a new one on its next request'],
    ['disable', 'refuse this device'],
    ['enable', 'accept this device again'],
  ] as const) {
    dataDirOption(cl.command(verb).description(what).argument('<client-id>')).action(async (id: string, o: DataDirOpt) => {
      const c = await withAdmin(o, (a) => (verb === 'reset' ? a.resetClient(id) : verb === 'disable' ? a.disableClient(id) : a.enableClient(id)));
      emit(o, c, (x) => `client ${x.id}: ${x.status}, ${x.enrolled ? 'secret enrolled' : 'no secret enrolled (the next request enrolls one)'}`);
    });
  }

  // ---- voices ----
  const vo = companion.command('voice').description('workspace voices');
  dataDirOption(vo.command('list').description('list the voices of a workspace').option('--workspace <ref>', 'workspace id or name', 'default')).action(
    async (o: DataDirOpt & { workspace: string }) => {
      const list = await withAdmin(o, (a) => a.listVoices(o.workspace).map((v) => ({ voice_id: v.id, name: v.name, category: v.category, language: v.language, description: v.description })));
      emit(o, { voices: list }, (r) => table(['voice id', 'name', 'category', 'language'], r.voices.map((v) => [v.voice_id, v.name, v.category, v.language])));
    },
  );
  dataDirOption(
    vo
      .command('design')
      .description('add a workspace voice designed from a description')
      .requiredOption('--name <name>', 'voice name')
      .requiredOption('--design <text>', 'e.g. "a warm, calm female voice, slow"')
      .option('--workspace <ref>', 'workspace id or name', 'default')
      .option('--language <code>', 'language code, e.g. en-us'),
  ).action(async (o: DataDirOpt & { name: string; design: string; workspace: string; language?: string }) => {
    const v = await withAdmin(o, (a) => a.addWorkspaceVoice({ workspace: o.workspace, name: o.name, design: o.design, language: o.language }));
    emit(o, { voice_id: v.id, name: v.name, category: v.category, language: v.language }, (x) => `voice ${x.name} (${x.voice_id}, ${x.language})`);
  });

  // ---- stories ----
  const st = companion.command('story').description('workspace stories');
  dataDirOption(
    st
      .command('import')
      .description('import stories from a JSON file (an array of {slug, name, transcript, ...}); a known slug is replaced')
      .argument('<file>')
      .option('--workspace <ref>', 'workspace id or name', 'default'),
  ).action(async (file: string, o: DataDirOpt & { workspace: string }) => {
    const rows = await withAdmin(o, (a) => a.importStoriesFile(o.workspace, file));
    emit(o, { imported: rows.map((s) => ({ story_id: s.id, slug: s.slug, name: s.name })) }, (r) => `imported ${r.imported.length} stories: ${r.imported.map((s) => s.slug ?? s.name).join(', ')}`);
  });
}
