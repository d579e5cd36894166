-- GET one item by a random id over the seeded rows.
request = function()
  return wrk.format("GET", "/items/" .. math.random(1, ROWS))
end
