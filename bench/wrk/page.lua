-- GET a 20-row keyset page starting at a random id.
request = function()
  return wrk.format("GET", "/items?limit=20&after=" .. math.random(0, ROWS - 20))
end
