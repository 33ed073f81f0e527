-- frames.lua: the engine's script. One tool call per frame: a tool name and
-- its arguments as JSON, paths under the engine's /game mount. A tool the
-- host does not offer is skipped.
return {
  { "list_dir", '{"path": "/game"}' },
  { "write_file", '{"path": "/game/saves/slot1.txt", "content": "level: 3\\nhealth: 70\\nweapon: sword\\n"}' },
  { "read_file", '{"path": "/game/saves/slot1.txt"}' },
  { "edit_file", '{"path": "/game/saves/slot1.txt", "old_text": "health: 70", "new_text": "health: 100"}' },
  { "grep", '{"pattern": "health: \\\\d+", "path": "/game/saves"}' },
  { "read_file", '{"path": "/game/saves/slot1.txt", "offset": 2, "limit": 1}' },
  { "read_file", '{"path": "/game/saves/slot9.txt"}' }, -- ENOENT
  { "read_file", '{"path": "/game/../etc/passwd"}' }, -- OUTSIDE_ROOT
  { "write_file", '{"path": "/game/.env", "content": "TOKEN=x"}' }, -- POLICY_DENIED (secrets)
}
