ALTER TABLE invocations ALTER COLUMN message_ids SET COMPRESSION default,
                        ALTER COLUMN stderr SET COMPRESSION default,
                        ALTER COLUMN emitted_messages SET COMPRESSION default;
