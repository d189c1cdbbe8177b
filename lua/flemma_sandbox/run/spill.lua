--- A job's spill file (run/job.lua, opts.spill_path): all of its output,
--- both streams, up to a cap, ended by a line saying where it was cut.
local M = {}

---@class flemma_sandbox.Spill
---@field file file*|nil nil without a spill file (or when it did not open)
---@field max number bytes kept at most
---@field seen integer bytes written to it so far, kept or not
local Spill = {}
Spill.__index = Spill

--- A spill to `path` (none when nil), keeping at most `max` bytes.
---@param path string|nil
---@param max number|nil
---@return flemma_sandbox.Spill
function M.new(path, max)
  return setmetatable({ file = path and io.open(path, "w+b") or nil, max = max or math.huge, seen = 0 }, Spill)
end

---@param data string
function Spill:write(data)
  local room = self.max - self.seen
  self.seen = self.seen + #data
  if self.file and room > 0 then
    self.file:write(#data > room and data:sub(1, room) or data)
  end
end

--- Closes the spill file; past its cap it ends with a line saying so.
---@return { kept: integer, total: integer }|nil
function Spill:close()
  local spill = self.file
  if not spill then
    return nil
  end
  local kept = math.min(self.seen, self.max)
  if self.seen > self.max then
    local last = "\n"
    if kept > 0 then
      spill:seek("set", kept - 1)
      last = spill:read(1) or "\n"
      spill:seek("end")
    end
    spill:write(
      string.format(
        "%s[flemma-sandbox: output cut here: the first %d of %d bytes were kept (tools.output_file_max_bytes)]\n",
        last == "\n" and "" or "\n",
        kept,
        self.seen
      )
    )
  end
  spill:close()
  self.file = nil
  return { kept = kept, total = self.seen }
end

return M
