// A TypeScript SDK v1 MCP server, for the interop tests of taskwire
// gateway only: `node server.js` serves over stdio; `node server.js --http`
// serves Streamable HTTP (stateless) on a free loopback port and prints
// "listening on http://127.0.0.1:PORT/mcp" on stdout.
//
// Tools:
//   slow.build {steps, stepMs}: sends notifications/progress "step i of n"
//     (when the call carries a progress token), waiting stepMs after each,
//     then answers {steps, call} as structuredContent matching its
//     outputSchema. Each call appends a line to the file named by
//     $TSUPSTREAM_CALLS (when set) before it starts, so that tests count
//     the calls across processes.
//   add {a, b}: answers {sum} at once.
import { appendFileSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function countCall() {
  const file = process.env.TSUPSTREAM_CALLS;
  if (!file) return 0;
  appendFileSync(file, "call\n");
  return readFileSync(file, "utf8").split("\n").filter(Boolean).length;
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(new Error("cancelled"));
    });
  });

function newServer() {
  const server = new McpServer({ name: "tsupstream", version: "1.0.0" });
  server.registerTool(
    "slow.build",
    {
      description: "Builds in steps, reporting each.",
      inputSchema: { steps: z.number().int().min(1).max(100), stepMs: z.number().int().min(0).max(60000).optional() },
      outputSchema: { steps: z.number().int(), call: z.number().int() },
    },
    async ({ steps, stepMs }, extra) => {
      const call = countCall();
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: steps, message: `step ${i} of ${steps}` },
          });
        }
        await sleep(stepMs ?? 0, extra.signal);
      }
      const out = { steps, call };
      return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  server.registerTool(
    "add",
    {
      description: "Adds two integers.",
      inputSchema: { a: z.number().int(), b: z.number().int() },
      outputSchema: { sum: z.number().int() },
    },
    async ({ a, b }) => {
      const out = { sum: a + b };
      return { content: [{ type: "text", text: JSON.stringify(out) }], structuredContent: out };
    },
  );
  return server;
}

if (process.argv.includes("--http")) {
  const http = createServer(async (req, res) => {
    if (!req.url?.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    // Stateless: a server and a transport per request.
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  http.listen(0, "127.0.0.1", () => {
    console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
  });
} else {
  // The gateway stops its upstream by closing its standard input.
  process.stdin.on("end", () => process.exit(0));
  await newServer().connect(new StdioServerTransport());
}
