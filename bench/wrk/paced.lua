-- Think time between a connection's requests: with C connections this paces the offered load.
delay = function()
  return DELAY_MS
end
