// The session's TURN URLs, one per call attempt. werift relays through one TURN server per call: the first `turn:`
// or `turns:` URL of the session (a UDP one falls back to TCP on the same host and port). A network that lets
// only TLS on port 443 out (a guest or office network) never reached a `turns:` URL listed after it, and every
// attempt failed the same way. Now an attempt whose call did not come up puts the next TURN URL first for the
// next one; the URL of a call that came up stays first. Kept in memory only: a restart starts at the service's
// own order again.
import type { IceServer } from '../../protocol/session.js';

const isTurnUrl = (url: string): boolean => /^turns?:/i.test(url.trim());

/** Each TURN URL of the servers as a server of its own (with its server's credentials), in the session's order. */
function turnUrls(servers: IceServer[]): IceServer[] {
  return servers.flatMap((s) => s.urls.filter(isTurnUrl).map((url) => ({ ...s, urls: [url] })));
}

export class TurnRotation {
  private offset = 0;

  /** The servers with this attempt's TURN URL first (werift takes the first it sees); unchanged with fewer than
   *  two TURN URLs. STUN URLs keep their order. */
  order(servers: IceServer[]): IceServer[] {
    const turn = turnUrls(servers);
    if (turn.length < 2) return servers;
    return [turn[this.offset % turn.length], ...servers];
  }

  /** The TURN URL this attempt relays through, for messages (URLs carry no credentials). */
  current(servers: IceServer[]): string | undefined {
    return this.order(servers).flatMap((s) => s.urls).find(isTurnUrl);
  }

  /** An attempt with these servers did not come up: the next one tries the next TURN URL. Returns that URL, or
   *  undefined when there is no other to try. */
  failed(servers: IceServer[]): string | undefined {
    const turn = turnUrls(servers);
    if (turn.length < 2) return undefined;
    this.offset = (this.offset + 1) % turn.length;
    return turn[this.offset].urls[0];
  }
}
