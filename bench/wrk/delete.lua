-- DELETE rows once each, in order from START (a contiguous range the driver seeded for this run).
local next_id = START
request = function()
  local path = "/items/" .. next_id
  next_id = next_id + 1
  return wrk.format("DELETE", path)
end
