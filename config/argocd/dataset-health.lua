-- Argo CD health check for data.pqcache.dev/Dataset. It reads the conditions the controller writes:
-- Stalled (a person must act) is Degraded; Ready is Healthy, even while a refresh runs or after one
-- failed, because the previous data is still served (the message says so); anything else Progressing.
local hs = { status = "Progressing", message = "Waiting for the pqcache controller" }
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
if obj.metadata.generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < obj.metadata.generation) then
  hs.message = "Waiting for the controller to observe the latest spec"
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
if conds["Stalled"] ~= nil and conds["Stalled"].status == "True" then
  hs.status = "Degraded"
  hs.message = describe(conds["Stalled"])
  return hs
end
local ready = conds["Ready"]
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
  local degraded = conds["Degraded"]
  if degraded ~= nil and degraded.status == "True" then
    hs.message = hs.message .. " (last refresh failed: " .. describe(degraded) .. ")"
  end
  return hs
end
if obj.spec ~= nil and obj.spec.refresh ~= nil and obj.spec.refresh.suspend == true then
  hs.status = "Suspended"
  hs.message = "refresh.suspend is set"
  return hs
end
if ready ~= nil then
  hs.message = describe(ready)
end
return hs
