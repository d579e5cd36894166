-- PATCH the quantity of a random item.
request = function()
  local body = '{"quantity": ' .. math.random(0, 1000) .. '}'
  return wrk.format("PATCH", "/items/" .. math.random(1, ROWS), {["Content-Type"] = "application/json"}, body)
end
