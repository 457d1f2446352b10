DROP TABLE account_slots;
