// A second host on this machine for network faults: a network namespace joined to this one by a veth pair
// (10.x.y.1 here, 10.x.y.2 inside), created and removed by the test (iproute2, as root). cut() takes the link down
// (nothing passes, nothing is refused: a network cut as a Wi-Fi drop looks to the device); restore() brings it back;
// renumber() gives this side another address (a new DHCP lease: the old one is gone, the link stays up);
// addSourceAddress() adds a second one and makes it the source of what this side sends (the first still works).
import { execFileSync } from 'node:child_process';

export interface NetNs {
  name: string;
  /** the address on this side and inside the namespace */
  hostIp: string;
  nsIp: string;
  /** this side's address after renumber() */
  renumberedIp: string;
  cut(): void;
  /** takes the namespace's side down: this side keeps its route, so packets to nsIp are sent and silently lost
   *  (a host that drops them; with cut() they would leave by the default route instead) */
  silence(): void;
  renumber(): void;
  /** the second address addSourceAddress() adds */
  secondIp: string;
  addSourceAddress(): void;
  restore(): void;
  /** a firewall in front of the namespace: UDP arriving from outside is dropped unless its source port is in
   *  lo..hi (a TURN server's relay ports), TCP still passes. The service is then reachable for its HTTP, but
   *  its media only through the relay (a symmetric NAT or a firewall that allows only the relay does the same). */
  admitUdpOnlyFromPorts(lo: number, hi: number): void;
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** A namespace, or undefined where this machine does not allow one (not root, no iproute2, no netns support). */
export function createNetNs(): NetNs | undefined {
  const id = process.pid % 250;
  const name = `sa-test-${process.pid}`;
  const [hostIf, nsIf] = [`sah${id}`, `san${id}`];
  const hostIp = `10.231.${id}.1`;
  const nsIp = `10.231.${id}.2`;
  const renumberedIp = `10.231.${id}.3`;
  const secondIp = `10.231.${id}.4`;
  const remove = () => {
    try {
      ip('netns', 'del', name);
    } catch {
      /* gone */
    }
    try {
      ip('link', 'del', hostIf);
    } catch {
      /* went with the namespace */
    }
  };
  try {
    remove();
    ip('netns', 'add', name);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    ip('link', 'set', nsIf, 'netns', name);
    ip('addr', 'add', `${hostIp}/24`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('netns', 'exec', name, 'ip', 'addr', 'add', `${nsIp}/24`, 'dev', nsIf);
    ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up');
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  } catch {
    remove();
    return undefined;
  }
  return {
    name,
    hostIp,
    nsIp,
    renumberedIp,
    secondIp,
    addSourceAddress: () => {
      ip('addr', 'add', `${secondIp}/24`, 'dev', hostIf);
      ip('route', 'replace', `10.231.${id}.0/24`, 'dev', hostIf, 'src', secondIp);
    },
    cut: () => ip('link', 'set', hostIf, 'down'),
    silence: () => ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'down'),
    // the old address first: deleting a primary address takes its secondaries with it
    renumber: () => {
      ip('addr', 'del', `${hostIp}/24`, 'dev', hostIf);
      ip('addr', 'add', `${renumberedIp}/24`, 'dev', hostIf);
    },
    restore: () => ip('link', 'set', hostIf, 'up'),
    // Policy routing, not a packet filter (this kernel offers no tc actions or netfilter tables to a test): rules
    // on what arrives by the veth, ahead of the `local` table's own rule (pref 0, moved after them), send UDP
    // from any other port to a blackhole.
    admitUdpOnlyFromPorts: (lo, hi) => {
      const rule = (...args: string[]) => ip('netns', 'exec', name, 'ip', 'rule', ...args);
      rule('add', 'pref', '10', 'iif', nsIf, 'ipproto', 'udp', 'sport', `${lo}-${hi}`, 'lookup', 'local');
      rule('add', 'pref', '20', 'iif', nsIf, 'ipproto', 'udp', 'blackhole');
      rule('add', 'pref', '100', 'lookup', 'local');
      rule('del', 'pref', '0');
    },
    remove,
  };
}
