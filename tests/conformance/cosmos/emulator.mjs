// Starts the Cosmos DB emulator in its own process (the built DroneDelivery.Emulators.CosmosDb.dll,
// plain HTTP on a free port, no modelled latency, several physical partitions per container) and
// stops it when the tests end or this process exits.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { CosmosClient } from "@azure/cosmos";

const here = dirname(fileURLToPath(import.meta.url));
const repository = resolve(here, "../../..");

/** The well-known emulator key (docs/emulators/cosmos-db.md). */
export const key = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

function emulatorAssembly() {
  // The build configuration to take the emulator from (.ci/run builds Release); Debug by default.
  const configuration = (process.env.BUILD_CONFIGURATION ?? "Debug").toLowerCase();
  const configured = process.env.COSMOS_EMULATOR_DLL;
  const path = configured ?? join(repository, `artifacts/bin/DroneDelivery.Emulators.CosmosDb/${configuration}/DroneDelivery.Emulators.CosmosDb.dll`);
  if (!existsSync(path)) {
    throw new Error(`${path} does not exist: build the solution first (dotnet build DroneDelivery.sln, with -c Release if BUILD_CONFIGURATION=Release) or set COSMOS_EMULATOR_DLL.`);
  }
  return path;
}

/** Starts an emulator whose run-time containers get `partitions` physical partitions. */
export async function startEmulator({ partitions = 4 } = {}) {
  const folder = mkdtempSync(join(tmpdir(), "cosmos-conformance-"));
  const config = join(folder, "emulator.json");
  writeFileSync(config, JSON.stringify({
    DefaultThroughput: 100000,
    DefaultPhysicalPartitions: partitions,
    Latency: { FixedMilliseconds: 0, PerDocumentMilliseconds: 0, ThrottledMilliseconds: 0 },
  }));

  const child = spawn("dotnet", [emulatorAssembly(), "--port", "0", "--config", config], { stdio: ["ignore", "pipe", "pipe"] });
  const stop = () => { if (child.exitCode === null) child.kill("SIGTERM"); };
  process.once("exit", stop);

  const output = [];
  const endpoint = await new Promise((resolveEndpoint, reject) => {
    const timer = setTimeout(() => reject(new Error(`The emulator did not start within 60 s:\n${output.join("\n")}`)), 60_000);
    const onLine = (chunk) => {
      for (const line of chunk.toString().split("\n")) {
        output.push(line);
        const ready = /^Cosmos DB emulator ready on (\S+)/.exec(line);
        if (ready) {
          clearTimeout(timer);
          resolveEndpoint(ready[1]);
        }
      }
    };
    child.stdout.on("data", onLine);
    child.stderr.on("data", onLine);
    child.once("exit", (code) => { clearTimeout(timer); reject(new Error(`The emulator exited with ${code}:\n${output.join("\n")}`)); });
  });

  return {
    endpoint,
    output,
    /**
     * A client as an application would configure one for this emulator; `retryOptions` as the SDK's
     * connectionPolicy takes them (`{ maxRetryAttemptCount: 0 }` turns its 429 retries off);
     * `plugins` as the SDK takes them, to see each request and the answer it got.
     */
    client({ retryOptions, plugins } = {}) {
      return new CosmosClient({
        endpoint,
        key,
        // The emulator is one endpoint; do not follow the account's locations.
        connectionPolicy: { enableEndpointDiscovery: false, ...(retryOptions ? { retryOptions } : {}) },
        ...(plugins ? { plugins } : {}),
      });
    },
    /** The emulator's own request log (docs/emulators/cosmos-db.md, "Request timings"). */
    async requests(after = 0) {
      const response = await fetch(new URL(`_emulator/requests?after=${after}&limit=100000`, endpoint));
      return response.json();
    },
    /** The sequence number of the last request logged, to read only what follows it. */
    async lastSequence() {
      const log = await this.requests(0);
      return log.length === 0 ? 0 : log[log.length - 1].sequence;
    },
    /** The capacity model's metrics (docs/emulators/cosmos-db.md, "Metrics"). */
    async metrics() {
      const response = await fetch(new URL("_emulator/metrics?seconds=1", endpoint));
      return response.json();
    },
    async stop() {
      stop();
      await new Promise((done) => (child.exitCode !== null ? done() : child.once("exit", done)));
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
