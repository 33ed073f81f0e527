-- burrow.transport.oauth: http.oauth (config.lua) to what the listener's resource
-- server takes (server/oauth.c, as JSON text): the protected resource
-- metadata (RFC 9728) and where it is served, the tenants by claim value,
-- each tenant's slot among the listener's tokens (its OAuth principals'
-- connection limits), and each tenant's read tools (what a read-only
-- scope may call). The checks themselves are C; a read-only principal's
-- operations are refused again at every judged object (context.lua).

local json = require("burrow.core").json

local oauth = {}

--- The well-known paths and URL of the metadata of a resource URL:
-- /.well-known/oauth-protected-resource, with the resource's path
-- appended when it has one (RFC 9728 section 3.1).
function oauth.metadata_location(resource)
  local origin, path = resource:match("^(https?://[^/?#]+)([^?#]*)")
  if path == "/" then path = "" end
  local base = "/.well-known/oauth-protected-resource"
  local paths = { base }
  if path ~= "" then paths[2] = base .. path end
  return paths, origin .. base .. path
end

-- A tool a read-only scope may call: it says it only reads.
local function reads_only(t)
  return type(t.annotations) == "table" and t.annotations.readOnlyHint == true
end

--- oc: http.oauth as parsed; names: tenant name -> index (1-based);
-- tokens: the listener's token list, to which one slot a tenant is added;
-- tools: each tenant's MCP tool list (by index). The JSON text for
-- burrow.server.http_start's oauth.
function oauth.setup(oc, names, tokens, tools, hc)
  local paths, url = oauth.metadata_location(oc.audience)
  local scopes = {}
  if oc.read_scope then scopes[#scopes + 1] = oc.read_scope end
  if oc.write_scope then scopes[#scopes + 1] = oc.write_scope end
  local slots, read_tools = {}, {}
  for i = 1, #tools do
    -- never the text of a real token: sha256 hex has no "-"
    tokens[#tokens + 1] = { sha256 = ("-"):rep(64), tenant = i,
      max_calls = oc.max_calls or (hc.max_calls or 16) * 16,
      max_sessions = oc.max_sessions or hc.max_sessions or 1000 }
    slots[i] = #tokens - 1
    local r = {}
    for _, t in ipairs(tools[i]) do if reads_only(t) then r[#r + 1] = t.name end end
    read_tools[i] = json.array(r)
  end
  local tenants = {}
  for value, name in pairs(oc.tenants or {}) do tenants[value] = names[name] - 1 end
  local metadata = { resource = oc.audience, authorization_servers = { oc.issuer },
    bearer_methods_supported = { "header" }, resource_name = "burrow" }
  if #scopes > 0 then metadata.scopes_supported = scopes end
  return json.encode {
    issuer = oc.issuer, audience = oc.audience, jwks_uri = oc.jwks_uri,
    resource_metadata = url, metadata_paths = paths, metadata = metadata,
    read_scope = oc.read_scope, write_scope = oc.write_scope,
    tenant_claim = oc.tenant_claim, tenants = tenants,
    default_tenant = oc.default_tenant and names[oc.default_tenant] - 1 or -1,
    slots = slots, read_tools = read_tools,
    jwks_ttl = oc.jwks_ttl, refetch_interval = oc.refetch_interval, skew = oc.skew, timeout = oc.timeout,
    introspection = oc.introspection,
  }, url
end

return oauth
