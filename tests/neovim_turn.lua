-- One Toolwire turn driven from Neovim's built-in LSP client, with its default capabilities
-- (workspace.applyEdit without workspace.workspaceEdit.documentChanges). Used by
-- tests/test_neovim.py:
--
--   nvim --headless --clean -n -i NONE -l tests/neovim_turn.lua CONFIG.json
--
-- CONFIG: {cmd, root, file, model, settings, wait_ms, out, typed?, type_first?, undo?,
-- editor_undo?, init_options?, code_action?: {range, diagnostic}}. The script opens `file`, starts Toolwire on it (vim.lsp.start), optionally
-- types into the buffer before the turn (`type_first`) or while the turn's first edit is on
-- its way (`typed`: applied right before Neovim applies the edit, as its own undo step),
-- runs one turn (toolwire/session/new, toolwire/session/prompt; or, with `code_action`, the
-- first quickfix Toolwire offers for the diagnostic, run with client:exec_cmd until its
-- closing window/showMessage), takes the session's
-- snapshot, optionally undoes the turn (`undo`: toolwire/session/undoTurn) or the last
-- change with Neovim's own undo (`editor_undo`), and writes what it saw to `out` as JSON.
-- Every wait is vim.wait on a condition (events are processed meanwhile), bounded by
-- `wait_ms`; any failure is written to `out` as `error`.

local cfg = vim.json.decode(table.concat(vim.fn.readfile(_G.arg[1]), '\n'))
local report = { steps = {} }

local function buffer_text(buf) -- as Neovim sends it to a language server
  local eol = vim.bo[buf].fileformat == 'dos' and '\r\n' or vim.bo[buf].fileformat == 'mac' and '\r' or '\n'
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, eol)
  if vim.bo[buf].eol then
    text = text .. eol
  end
  return text
end

local function type_into(buf, t)
  vim.api.nvim_buf_set_text(buf, t.line, t.col, t.line, t.col, vim.split(t.text, '\n', { plain = true }))
  vim.cmd('let &undolevels = &undolevels') -- what was typed is one undo step of its own
end

local function run()
  vim.cmd.edit(vim.fn.fnameescape(cfg.file))
  local buf = vim.api.nvim_get_current_buf()
  local messages = {}
  vim.lsp.handlers['window/showMessage'] = function(_, params)
    table.insert(messages, params.message) -- a code action's closing message
  end
  local id = assert(vim.lsp.start({ name = 'toolwire', cmd = cfg.cmd, root_dir = cfg.root,
    init_options = cfg.init_options }, { bufnr = buf }))
  local client = assert(vim.lsp.get_client_by_id(id))
  assert(vim.wait(cfg.wait_ms, function()
    return client.initialized and vim.lsp.buf_is_attached(buf, id)
  end, 10), 'Toolwire did not start (initialize, didOpen)')
  report.offset_encoding = client.offset_encoding
  report.document_changes = vim.tbl_get(client.capabilities or {}, 'workspace', 'workspaceEdit', 'documentChanges')
    or false
  report.apply_edit = vim.tbl_get(client.capabilities or {}, 'workspace', 'applyEdit') or false

  local function request(method, params)
    local done, answer, failure = false, nil, nil
    assert(client:request(method, params, function(err, result)
      done, answer, failure = true, result, err
    end, buf))
    assert(vim.wait(cfg.wait_ms, function() return done end, 10), method .. ' got no answer')
    if failure then
      error(method .. ' failed: ' .. vim.inspect(failure))
    end
    return answer
  end

  if cfg.type_first then
    type_into(buf, cfg.type_first)
  end
  local edits = 0
  local default = vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(err, params, ctx, config)
    edits = edits + 1
    table.insert(report.steps, { applyEdit = vim.deepcopy(params.edit) }) -- as sent (Neovim sorts it in place)
    if cfg.typed and edits == 1 then
      type_into(buf, cfg.typed) -- the user types while the edit is on its way
    end
    return default(err, params, ctx, config)
  end

  local session
  if cfg.code_action then -- as vim.lsp.buf.code_action() would: ask for the actions, run the fix
    local actions = request('textDocument/codeAction', { textDocument = { uri = vim.uri_from_bufnr(buf) },
      range = cfg.code_action.range, context = { diagnostics = { cfg.code_action.diagnostic }, only = { 'quickfix' } } })
    report.actions = vim.tbl_map(function(a) return a.title end, actions)
    local started
    client:exec_cmd(actions[1].command, { bufnr = buf }, function(err, result)
      assert(not err, vim.inspect(err))
      started = result
    end)
    assert(vim.wait(cfg.wait_ms, function()
      return started ~= nil and vim.iter(messages):any(function(m) return m:find('^Toolwire %(') ~= nil end)
    end, 10), 'the code action never ended (no closing message)')
    session = started
    report.messages = messages
  else
    session = request('toolwire/session/new', { cwd = cfg.root, model = cfg.model, settings = cfg.settings })
    report.prompt = request('toolwire/session/prompt', {
      sessionId = session.sessionId, prompt = { { type = 'text', text = 'go' } } })
  end
  report.snapshot = request('toolwire/session/snapshot', { sessionId = session.sessionId })
  report.buffer = buffer_text(buf)
  if cfg.undo then
    report.undo = request('toolwire/session/undoTurn', { sessionId = session.sessionId })
    report.buffer_after_undo = buffer_text(buf)
  end
  if cfg.editor_undo then
    vim.cmd.undo()
    report.buffer_after_editor_undo = buffer_text(buf)
  end
  report.edits = edits
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  report.error = err
end
vim.fn.writefile({ vim.json.encode(report) }, cfg.out)
vim.cmd('qall!')
