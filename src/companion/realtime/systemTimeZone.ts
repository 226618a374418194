// The machine's time zone as it is now, for the clock the assistant reads out. Node reads the zone once per
// process: a zone set after the companion started (raspi-config or `timedatectl set-timezone` on a new speaker)
// left "what time is it" hours off until a restart, which on a speaker can be months away. /etc/localtime's link
// names the zone; a TZ given in the environment at start wins (someone chose it).
import { readlinkSync } from 'node:fs';

const tzAtStart = process.env.TZ;
let lastLink: string | undefined;

/** Brings this process's zone in line with `localtime`'s link (assigning TZ makes node read the zone again). */
export function followSystemTimeZone(localtime = '/etc/localtime'): void {
  if (tzAtStart !== undefined) return;
  let link: string;
  try {
    link = readlinkSync(localtime);
  } catch {
    return; // not a link (a copied file) or none: node's own reading stands
  }
  if (link === lastLink) return;
  lastLink = link;
  const zone = /zoneinfo\/(.+)$/.exec(link)?.[1];
  if (zone) process.env.TZ = zone;
}
