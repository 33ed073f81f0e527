-- line_count: an operator's own tool. It uses the same primitives as the
-- native tools (ctx:resolve, ctx.roots:read), so it is confined to the
-- roots and goes through the policies like them.
return {
  name = "line_count",
  description = [[Count the lines of a text file without reading it into the conversation.
Example: {"path": "README.md"}]],
  input_schema = {
    type = "object",
    properties = { path = { type = "string", description = "The file: relative to the first root, or absolute under a root." } },
    required = { "path" },
    additionalProperties = false,
  },
  kind = "read", -- its MCP annotations, permissions and risk (docs/embedding.md, "A tool's kind")
  handler = function(ctx, a)
    local idx, rel, code = ctx:resolve(a.path)
    if not idx then return nil, rel, code end
    local f, detail, rcode = ctx.roots:read(idx, rel, ctx.caps.max_file_size)
    if not f then return ctx:fail(rcode, a.path, detail) end
    local scan, serr, scode = f:scan()
    local size = f:size()
    f:close()
    if not scan then return ctx:fail(scode, a.path, serr) end
    if scan.binary then return ctx:fail("BINARY", a.path) end
    return { path = a.path, lines = scan.lines, bytes = size, newline = scan.newline }
  end,
}
