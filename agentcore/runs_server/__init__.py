"""The runs server: agentcore's runs library and loop offered to MCP clients (`agentcore mcp-server`).

It is a server, where `agentcore.mcp` is the client that gives agentcore's agent the tools of other servers.
`server` builds and serves it; `args` are its tools' arguments as a client reads them, `data` what they return,
`tools` the calls that spend model calls or time, `limits` what a client may name and do in one call, and
`http` the shared server over Streamable HTTP. The `mcp` extra brings the official SDK it is built on.
"""
