-- burrow-scm-1: the rock of a checkout. From the repository root:
--
--   luarocks --lua-version=5.4 make                 # system tree (root)
--   luarocks --lua-version=5.4 --local make         # ~/.luarocks
--   luarocks --lua-version=5.4 --tree=DIR make      # any tree
--   luarocks --lua-version=5.1 make                 # 5.1, 5.2, 5.3, LuaJIT
--
-- Under Lua 5.4 it is burrow.core, the whole binding in the host's state
-- (core.so), with burrow.server and burrow.host beside it (server.so and
-- host.so, which load that core.so: one copy of it in the process).
-- Under 5.1-5.3 and LuaJIT it is libburrow (its own Lua 5.4 state, the
-- tools and policies built in) with burrow.native or burrow.ffi calling in
-- (docs/embedding.md, "Any Lua"); the Makefile tells them apart by the
-- LUA_INCDIR it is given.
--
-- Dependencies: Lua and C libraries, all Debian 12 packages (lua5.4,
-- liblua5.4-dev, lua-lpeg-dev, libpcre2-dev, libyaml-dev, libssl-dev,
-- libjansson-dev, libmicrohttpd-dev, libuchardet-dev, luarocks). They are
-- external dependencies LuaRocks finds under /usr (as lrexlib-pcre2 and
-- lyaml declare theirs), so `luarocks make` works offline. LPeg is one of
-- them: Debian's liblua5.4-lpeg is linked into burrow.core, which offers
-- it as package.preload.lpeg (no lpeg rock, no lpeg.so needed).
-- docs/embedding.md has the details.
--
-- A source rock: `make src-rock` (this rockspec with its source pointed at
-- a git archive of the checkout, packed offline into build/src-rock/).
--
-- burrow is MIT-licensed (LICENSE at the top of the tree).
--
-- Releases follow LuaRocks' NAME-VERSION-REVISION convention:
-- rockspec/burrow-0.1.0-1.rockspec with source.url a release tarball and
-- source.tag the release tag.
rockspec_format = "3.0"
package = "burrow"
version = "scm-1"

source = {
   -- `luarocks make` builds the checkout it runs in and fetches nothing;
   -- `make src-rock` replaces this line with the archive it writes
   url = "git+file://.",
}

description = {
   summary = "Sandboxed filesystem tool host for AI agents",
   detailed = [[
burrow serves filesystem tools (read_file, write_file, edit_file, list_dir,
grep, glob, ...) to AI agents over directories held as fds and resolved with
openat2(RESOLVE_BENEATH) or a race-free fd walk. Tools and policies are Lua.
require "burrow" opens a workspace and calls tools directly, with plain Lua
tables in and out, and renders the tool list for MCP, OpenAI and Anthropic
function calling.
]],
   labels = { "filesystem", "sandbox", "agents", "mcp" },
   license = "MIT",
}

supported_platforms = { "linux" }

dependencies = {
   "lua >= 5.1, < 5.5",
}

-- The C libraries burrow.core links. LuaRocks looks for each header and
-- library under external_deps_dirs (/usr/local, /usr) and passes the
-- directories it found to the build as NAME_INCDIR / NAME_LIBDIR.
external_dependencies = {
   PCRE2 = { header = "pcre2.h", library = "pcre2-8" },
   YAML = { header = "yaml.h", library = "yaml" },
   CRYPTO = { header = "openssl/evp.h", library = "crypto" },
   JANSSON = { header = "jansson.h", library = "jansson" },
   -- headers only: libmicrohttpd (burrow mcp --http), libuchardet (text
   -- that is not UTF-8) and libhiredis (the Redis state store; libssl's
   -- headers come with CRYPTO's) are opened at run time when first needed
   -- (dynlib.c)
   MHD = { header = "microhttpd.h" },
   UCHARDET = { header = "uchardet/uchardet.h" },
   HIREDIS = { header = "hiredis/hiredis.h" },
   -- LPeg, linked in: burrow.base.caps (sizes, durations), burrow.toolkit.patch_grammar
   LPEG = { header = "lua5.4/lua-lpeg.h", library = "lua5.4-lpeg" },
   -- Lua 5.4 itself: burrow's own state (tools, policies) is 5.4 whatever
   -- Lua the rock is for
   LUA54 = { header = "lua5.4/lua.h", library = "lua5.4" },
}

-- The Makefile's `rock` target builds burrow.core from host/src (core and
-- binding), burrow.server (server) and burrow.host (api), every file: no
-- list here to go stale; `rock-install` puts the three in the rock's lib
-- dir and lua/burrow, lua/tools (packs included) and lua/policy in its lua
-- dir, tools and policies under
-- burrow/, where lua/burrow/base/files.lua finds them for the registry and
-- the policy loader (and the folders of lua/burrow keep clear of the names
-- tools/ and policy/).
build = {
   type = "make",
   build_target = "rock",
   build_variables = {
      CC = "$(CC)",
      CFLAGS = "$(CFLAGS)",
      LIBFLAG = "$(LIBFLAG)",
      LUA_INCDIR = "$(LUA_INCDIR)",
      PCRE2_INCDIR = "$(PCRE2_INCDIR)",
      PCRE2_LIBDIR = "$(PCRE2_LIBDIR)",
      YAML_INCDIR = "$(YAML_INCDIR)",
      YAML_LIBDIR = "$(YAML_LIBDIR)",
      CRYPTO_INCDIR = "$(CRYPTO_INCDIR)",
      CRYPTO_LIBDIR = "$(CRYPTO_LIBDIR)",
      JANSSON_INCDIR = "$(JANSSON_INCDIR)",
      JANSSON_LIBDIR = "$(JANSSON_LIBDIR)",
      MHD_INCDIR = "$(MHD_INCDIR)",
      UCHARDET_INCDIR = "$(UCHARDET_INCDIR)",
      HIREDIS_INCDIR = "$(HIREDIS_INCDIR)",
      LPEG_INCDIR = "$(LPEG_INCDIR)",
      LPEG_LIBDIR = "$(LPEG_LIBDIR)",
      LUA54_INCDIR = "$(LUA54_INCDIR)",
      LUA54_LIBDIR = "$(LUA54_LIBDIR)",
   },
   install_target = "rock-install",
   install_variables = {
      ROCK_LUADIR = "$(LUADIR)",
      ROCK_LIBDIR = "$(LIBDIR)",
      LUA_INCDIR = "$(LUA_INCDIR)", -- which Lua the rock is for
   },
}

-- `luarocks test`: the installed rock under the Lua it was built for
-- (test/anylua/run.sh runs it for each; `make test` runs far more)
test = {
   type = "command",
   script = "rockspec/check.lua",
}
