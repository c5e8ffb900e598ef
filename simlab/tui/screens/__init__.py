"""The viewer's screens: runs → scenarios → trials → transcript, plus compare, help and pickers."""
