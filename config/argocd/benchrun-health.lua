-- Argo CD health check for data.pqcache.dev/BenchRun, a one-shot run: Succeeded=True is Healthy,
-- Succeeded=False (a failed or mismatched run) or Stalled is Degraded, anything else Progressing.
local hs = { status = "Progressing", message = "Waiting for the pqcache controller" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local conds = {}
for _, c in ipairs(obj.status.conditions) do
  conds[c.type] = c
end
local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end
local succeeded = conds["Succeeded"]
if succeeded ~= nil and succeeded.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(succeeded)
  return hs
end
if succeeded ~= nil and succeeded.status == "False" then
  hs.status = "Degraded"
  hs.message = describe(succeeded)
  return hs
end
if conds["Stalled"] ~= nil and conds["Stalled"].status == "True" then
  hs.status = "Degraded"
  hs.message = describe(conds["Stalled"])
  return hs
end
if succeeded ~= nil then
  hs.message = describe(succeeded)
end
if obj.status.progress ~= nil and obj.status.progress ~= "" then
  hs.message = hs.message .. " (" .. obj.status.progress .. ")"
end
return hs
