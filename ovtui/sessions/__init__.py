"""Sessions (seed 004): conversations committed into user memories and experience training,
and the OpenViking-compatible session API that receives them."""
