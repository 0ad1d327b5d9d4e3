/*
 * Live title and metadata of a running tool call (docs/OPENCODE.md, "Live
 * title and metadata").
 */
import type { ToolContext } from "@opencode-ai/plugin";

/** The slice of OpenCode's SDK client (PluginInput.client) that liveMetadata uses. */
export interface PartClient {
  session: {
    message(o: { path: { id: string; messageID: string } }): Promise<{ data?: { parts?: any[] } }>;
    _client?: { patch(o: Record<string, unknown>): Promise<{ error?: unknown }> };
  };
}

/**
 * ctx.metadata that reaches the UI. OpenCode 1.18.33 hands plugin tools its
 * internal metadata function, which returns an Effect that nobody runs: the
 * call is a no-op, and a running tool's title and metadata never change. When
 * ctx.metadata returns something (that Effect), the update is made through
 * OpenCode's own server API instead (the SDK client OpenCode gives the
 * plugin): the tool part of this call (its callID) is read and written back
 * in state "running" with the new title and metadata, which OpenCode stores
 * and publishes (message.part.updated), as it does for its built-in tools.
 * Updates are sent one at a time, the latest wins, and flush() waits for the
 * last, so that none lands after the call's result.
 */
export function liveMetadata(ctx: ToolContext, client?: PartClient): { ctx: ToolContext; flush(): Promise<void> } {
  const callID = (ctx as any).callID as string | undefined;
  let chain: Promise<void> = Promise.resolve();
  let next: { title?: string; metadata?: Record<string, any> } | undefined;
  let partID: string | undefined;
  let closed = false;
  const send = async () => {
    const upd = next;
    next = undefined;
    if (!upd || closed || !client?.session?._client) return;
    // The part goes from pending to running (with the model's input) when
    // OpenCode's processor handles the tool call, which may be just after
    // this call started. Writing back a pending part would store its empty
    // input over the model's: wait until it runs.
    let part: any;
    for (let i = 0; ; i++) {
      const r = await client.session.message({ path: { id: ctx.sessionID, messageID: ctx.messageID } });
      part = (r.data?.parts ?? []).find((p: any) => p.type === "tool" && (partID ? p.id === partID : p.callID === callID));
      if (!part || closed) return;
      if (part.state?.status === "running") break;
      if (part.state?.status !== "pending" || i >= 50) return;
      await new Promise((res) => setTimeout(res, Math.min(10 * (i + 1), 100)));
    }
    partID = part.id;
    const state = { status: "running", input: part.state.input ?? {}, title: upd.title, metadata: upd.metadata ?? {},
      time: { start: part.state.time?.start ?? Date.now() } };
    await client.session._client.patch({
      url: "/session/{sessionID}/message/{messageID}/part/{partID}",
      path: { sessionID: ctx.sessionID, messageID: ctx.messageID, partID: part.id },
      body: { ...part, state },
      headers: { "Content-Type": "application/json" },
    });
  };
  const metadata = (input: { title?: string; metadata?: Record<string, any> }) => {
    const ret = (ctx.metadata as (i: typeof input) => unknown)(input);
    if (ret === undefined || closed || !callID || !client) return; // OpenCode applied it itself
    const queued = next !== undefined;
    next = input;
    if (!queued) chain = chain.then(send).catch(() => { /* a missed update only */ });
  };
  return {
    ctx: { ...ctx, metadata } as ToolContext,
    async flush() { for (let c = chain; ; c = chain) { await c; if (c === chain) break; } closed = true; },
  };
}
