// usage: tsx agentHttpModules.ts: imports the agent's modules that use HTTP and prints the built-in modules node has
// loaded by then (JSON: process.moduleLoadList), for test/common/nodeHttp.test.ts.
await import('../../src/agent/serviceClient.js');
await import('../../src/agent/statusServer.js');
await import('../../src/cli/statusClient.js');
console.log(JSON.stringify((process as unknown as { moduleLoadList: string[] }).moduleLoadList)); // not in @types/node
