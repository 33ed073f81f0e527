-- burrow.mcp.resource_ops: the Files Working Group's resource operations
-- strawman (io.modelcontextprotocol/resource-operations, provisional):
-- resources/stat, resources/create (only if absent), resources/update
-- (only if ifMatch is the current version) and resources/delete (with or
-- without ifMatch) on file:// URIs. Nothing here touches a file: each
-- operation is one call of the tool that does the same thing, run as a
-- tools/call runs it (Server:run_tool: the same policies, quotas,
-- approvals, caps, audit and undo), and the compare-and-set is that
-- tool's own, in the core:
--
--   resources/stat     stat {path, content_hash = true}
--   resources/create   write_file {path, content, encoding = "base64", expected_hash = "absent"}
--   resources/update   write_file {..., expected_hash = the hash ifMatch names, create_dirs = false}
--   resources/delete   remove {path, expected_hash = the hash ifMatch names, or stat's}
--
-- A file's version is its content_hash (the SHA-256 of its bytes,
-- "sha256:<64 hex>"), a dot, and the first 16 hex digits of the SHA-256 of
-- the mimeType its URI's name gives (resources.mime(path)): a digest of the
-- content and the type, from which burrow takes back the content hash the
-- core compares. Clients treat it as opaque (docs/resources.md).

local core = require "burrow.core"
local json = core.json
local resources = require "burrow.mcp.resources"
local base = require "burrow.mcp.base"
-- the operator's resources (burrow.workspace.operator_resources), required with the
-- first use (a start that answers initialize needs none)
local function operator() return require "burrow.workspace.operator_resources" end
local printer = require "burrow.toolkit.printer"

local ops = {}

ops.EXT = base.RESOURCE_OPS_EXT

-- The strawman's error codes (provisional, implementation-defined band).
ops.PRECONDITION = -32010
ops.NOT_SUPPORTED = -32011

--- The extension's capability entry: no resources/directory/read here.
ops.capability = base.resource_ops_capability

ops.version, ops.hash_of = resources.version, resources.hash_of

-- A hash no file has: an ifMatch that names none of ours is stale, and the
-- core's compare says so (with what is there now).
local NO_HASH = "sha256:0"

local function invalid(uri, why)
  return nil, -32602, "Invalid params: " .. why, { reason = "invalidUri", uri = type(uri) == "string" and uri or nil }
end

local function not_supported(uri, msg, code)
  return nil, ops.NOT_SUPPORTED, msg, { reason = "notSupported", uri = uri, code = code }
end

-- The strawman's error for a tool's failure (msg, code: its message and
-- stable code, kept in data.code).
local function refusal(uri, msg, code)
  if code == "ENOENT" then return nil, -32602, "Resource not found: " .. msg, { reason = "notFound", uri = uri, code = code } end
  if code == "OUTSIDE_ROOT" or code == "INVALID_ARGUMENT" then
    return nil, -32602, "Invalid params: " .. msg, { reason = "invalidUri", uri = uri, code = code }
  end
  if code == "TOO_LARGE" then return nil, -32602, "Invalid params: " .. msg, { uri = uri, code = code } end
  if code == "EIO" or code == "EAGAIN" or code == "INTERNAL" then return nil, -32603, msg, { uri = uri, code = code } end
  -- POLICY_DENIED, READ_ONLY_ROOT, EACCES, EISDIR, ENOTDIR, NOT_REGULAR, ELOOP, ...
  return not_supported(uri, msg, code)
end

-- The path of a file:// URI; an operator's resource (read-only) or
-- another URI: nil and the error.
local function target(self, uri)
  if type(uri) ~= "string" then return invalid(uri, "uri must be a string") end
  local path, why = resources.path(uri)
  if path then return path end
  if operator().watch(self.ws, uri) ~= false then
    return not_supported(uri, "the operator's resources are read-only: " .. uri)
  end
  return invalid(uri, why)
end

-- run_tool's answer with its result as Lua tables (burrow.toolkit.printer): read here, not sent
local function tables_of(ran, res, ...)
  if not ran or res == nil then return ran, res, ... end
  local t, msg, code = printer.tables(res)
  if t == nil then return ran, nil, msg, code end -- a held page that could not be written
  return ran, t, ...
end

-- Run tool with args as a tools/call would: true, res, msg, code,
-- details; or false and the request's own answer (res, code, msg, data).
-- A tool the operator does not serve is an operation not supported.
local function run(self, tool, args, params, id, uri)
  if not self.ws:tool(tool) then
    return false, not_supported(uri, ("%s is not among this server's tools"):format(tool))
  end
  return tables_of(self:run_tool(tool, args, params, id))
end

-- The bytes of params.contents (TextResourceContents or
-- BlobResourceContents for uri), their mimeType and the blob as sent; or
-- nil and the error.
local function contents_of(params, uri, path)
  local c = params.contents
  if type(c) ~= "table" or getmetatable(c) == json.array_mt then return invalid(uri, "contents must be an object") end
  if c.uri ~= uri then return invalid(uri, "contents.uri must equal uri") end
  local bytes
  if type(c.text) == "string" and c.blob == nil then bytes = c.text
  elseif type(c.blob) == "string" and c.text == nil then
    local ok, raw = pcall(core.base64_decode, c.blob)
    if not ok or raw == nil then return invalid(uri, "contents.blob is not base64") end
    bytes = raw
  else return invalid(uri, "contents needs text or blob (a string), not both") end
  local binary = bytes:sub(1, 8192):find("\0", 1, true) or not utf8.len(bytes)
  local mime = resources.mime(path, binary)
  if c.mimeType ~= nil and c.mimeType ~= mime and c.mimeType ~= resources.mime(path) then
    return not_supported(uri, ("a file's mimeType follows its name here (%s), not %s"):format(mime, tostring(c.mimeType)))
  end
  return bytes, mime, c.blob -- a blob goes to write_file as sent: no second copy
end

local function name_of(path) return path:match("([^/]*)/*$") end

-- A write's answer: the resource, its version, the change.
local function written(uri, path, bytes, mime, hash, effect, previous)
  local version = ops.version(path, hash)
  return { resource = { uri = uri, name = name_of(path), mimeType = mime, size = #bytes }, version = version,
    changes = json.array { { uri = uri, effect = effect, previousVersion = previous, version = version } } }
end

-- -32010: the precondition failed; current: the content hash now, if known.
local function precondition(uri, path, reason, current)
  return nil, ops.PRECONDITION, reason == "alreadyExists" and ("Already exists: " .. uri)
    or ("Version mismatch: " .. uri .. " changed since that version was read; read it again"),
    { reason = reason, uri = uri, currentVersion = current and ops.version(path, current) or nil }
end

-- stat {content_hash = true} of path: the tool's result, or nil and the
-- request's answer instead (res, code, msg, data packed: the request's own
-- answer, or the tool's failure as the strawman's error).
local function stat(self, uri, path, params, id)
  local ran, r, msg, code, details = run(self, "stat", { path = path, content_hash = true }, params, id, uri)
  if not ran then return nil, { r, msg, code, details } end
  if not r then return nil, { refusal(uri, msg, code) } end
  return r
end

function ops.stat(self, params, id)
  local path, ecode, emsg, edata = target(self, params.uri)
  if not path then return nil, ecode, emsg, edata end
  local uri = params.uri
  local r, answer = stat(self, uri, path, params, id)
  if not r then return table.unpack(answer, 1, 4) end
  local res = { resource = { uri = uri, name = name_of(path), size = r.size, annotations = { lastModified = r.mtime } },
    ttlMs = 0, cacheScope = "private" }
  if r.type == "file" then
    res.resource.mimeType = resources.mime(path, r.binary)
    res.version = ops.version(path, r.content_hash)
  elseif r.type == "dir" then -- to mtime's resolution: a version for a snapshot, never for a write
    res.resource.mimeType = "inode/directory"
    res.version = core.sha256(("inode/directory\0%s\0%d"):format(r.mtime, r.nlink))
  else
    return not_supported(uri, ("%s is a %s: a resource here is a regular file or a directory"):format(uri, r.type))
  end
  return res
end

function ops.create(self, params, id)
  local path, ecode, emsg, edata = target(self, params.uri)
  if not path then return nil, ecode, emsg, edata end
  local uri = params.uri
  local bytes, mime_or_code, blob_or_msg, edata2 = contents_of(params, uri, path)
  if not bytes then return nil, mime_or_code, blob_or_msg, edata2 end
  local ran, r, msg, code, details = run(self, "write_file", { path = path, content = blob_or_msg or core.base64_encode(bytes),
    encoding = "base64", expected_hash = "absent" }, params, id, uri)
  if not ran then return r, msg, code, details end
  if not r then
    if code == "HASH_MISMATCH" then
      local now = details and details.current
      return precondition(uri, path, "alreadyExists", now ~= "absent" and now or nil)
    end
    return refusal(uri, msg, code)
  end
  return written(uri, path, bytes, mime_or_code, r.content_hash, "created")
end

function ops.update(self, params, id)
  local path, ecode, emsg, edata = target(self, params.uri)
  if not path then return nil, ecode, emsg, edata end
  local uri = params.uri
  if type(params.ifMatch) ~= "string" then return invalid(uri, "ifMatch (a version from resources/stat, create, update or read) is required") end
  local bytes, mime_or_code, blob_or_msg, edata2 = contents_of(params, uri, path)
  if not bytes then return nil, mime_or_code, blob_or_msg, edata2 end
  local expected = ops.hash_of(path, params.ifMatch) or NO_HASH
  local ran, r, msg, code, details = run(self, "write_file", { path = path, content = blob_or_msg or core.base64_encode(bytes),
    encoding = "base64", expected_hash = expected, create_dirs = false }, params, id, uri)
  if not ran then return r, msg, code, details end
  if not r then
    if code == "HASH_MISMATCH" then
      local now = details and details.current
      if now == "absent" then
        return nil, -32602, "Resource not found: " .. uri, { reason = "notFound", uri = uri, code = "ENOENT" }
      end
      return precondition(uri, path, "versionMismatch", now)
    end
    return refusal(uri, msg, code)
  end
  return written(uri, path, bytes, mime_or_code, r.content_hash, "updated", params.ifMatch)
end

function ops.delete(self, params, id)
  local path, ecode, emsg, edata = target(self, params.uri)
  if not path then return nil, ecode, emsg, edata end
  local uri = params.uri
  if params.ifMatch ~= nil and type(params.ifMatch) ~= "string" then return invalid(uri, "ifMatch must be a string") end
  local expected
  if params.ifMatch then
    expected = ops.hash_of(path, params.ifMatch) or NO_HASH
  else -- the file as it is now: a directory is refused, and a change in between fails loudly
    local r, answer = stat(self, uri, path, params, id)
    if not r then return table.unpack(answer, 1, 4) end
    if r.type ~= "file" then
      return not_supported(uri, ("%s is a %s: resources/delete removes a file"):format(uri, r.type))
    end
    expected = r.content_hash
  end
  local ran, r, msg, code = run(self, "remove", { path = path, expected_hash = expected }, params, id, uri)
  if not ran then return r, msg, code end
  if not r then
    if code == "HASH_MISMATCH" then -- what is there now, if a stat may say
      local now = stat(self, uri, path, params, id)
      if now and now.type ~= "file" then
        return not_supported(uri, ("%s is a %s: resources/delete removes a file"):format(uri, now.type))
      end
      return precondition(uri, path, "versionMismatch", now and now.content_hash)
    end
    if code == "INVALID_ARGUMENT" then -- a directory: expected_hash is for files
      return not_supported(uri, ("%s is not a file: resources/delete removes a file"):format(uri), code)
    end
    return refusal(uri, msg, code)
  end
  return { changes = json.array { { uri = uri, effect = "deleted", previousVersion = ops.version(path, expected) } } }
end

return ops
