// The default workspace's content for a fresh install (seedDefaults in admin.ts): a few workspace voices and
// short original stories, so the README's walkthrough has something to list, read and narrate.
import type { StoryImport } from './storyImport.js';

export const DEFAULT_VOICES: ReadonlyArray<{ name: string; design: string; description: string }> = [
  { name: 'Storyteller', design: 'a warm, calm female voice, slow and gentle, American', description: 'warm and calm, for bedtime stories' },
  { name: 'Narrator', design: 'a deep, low male voice, British, measured pace', description: 'deep and measured' },
  { name: 'Sprite', design: 'a bright, cheerful young female voice, fast and lively', description: 'bright and lively' },
];

export const DEFAULT_STORIES: ReadonlyArray<Omit<StoryImport, 'default_voice'>> = [
  {
    slug: 'the-lantern-fox',
    name: 'The Lantern Fox',
    age_group: '3-6',
    excerpt: 'A little fox carries a lantern through the snowy wood to find the lost moon.',
    illustration_url: 'https://example.invalid/illustrations/lantern-fox.png',
    illustration_alt: 'A small red fox holding a glowing lantern in a snowy forest',
    sort_order: 1,
    transcript:
      'Once upon a time, in a wood where the snow fell softly every night, there lived a little fox named Pip. ' +
      'One evening Pip looked up and saw that the moon was gone. The owls were worried, and the rabbits could not find their way home. ' +
      'So Pip lit her grandmother\'s old lantern and set off between the silver trees. ' +
      'She asked the river, and the river said: "I saw the moon this morning, floating behind the hill." ' +
      'She asked the wind, and the wind said: "The moon is shy tonight. It is hiding in the frozen pond." ' +
      'Pip walked to the pond and held up her lantern. There, under the ice, the moon was sleeping. ' +
      '"Wake up, moon," whispered Pip. "Everyone is looking for you." ' +
      'The moon yawned, rose slowly into the sky, and lit the whole wood. ' +
      'The rabbits found their way home, the owls sang, and Pip walked back to her den, warm and happy. The end.',
  },
  {
    slug: 'the-robot-who-planted-a-garden',
    name: 'The Robot Who Planted a Garden',
    age_group: '4-8',
    excerpt: 'Bolt the robot has never seen a flower, until one seed changes everything.',
    illustration_url: 'https://example.invalid/illustrations/robot-garden.png',
    illustration_alt: 'A friendly round robot watering a sprouting seed in a city window box',
    sort_order: 2,
    transcript:
      'Bolt was a small robot who swept the streets of a grey city. Every day he swept, and every night he charged his battery. ' +
      'One morning he found a tiny seed stuck in his brush. "What are you?" asked Bolt. The seed did not answer. ' +
      'Bolt put the seed in a cup of soil on his window and gave it three drops of water. ' +
      'Day one, nothing happened. Day two, nothing happened. On day seven, a green shoot poked out of the soil. ' +
      'Bolt was so surprised that his lights blinked blue and yellow. ' +
      'He planted more seeds, in old boxes, in broken boots, along the edges of the street. ' +
      'By summer the grey city had turned green and gold, and children came to see the robot who planted a garden. ' +
      'Bolt still sweeps the streets, but now he stops to say good morning to every flower. The end.',
  },
  {
    slug: 'the-cloud-that-wanted-to-rain',
    name: 'The Cloud That Wanted to Rain',
    age_group: '2-5',
    excerpt: 'Nimbus is the smallest cloud in the sky, and she wants to help the thirsty fields.',
    illustration_url: 'https://example.invalid/illustrations/little-cloud.png',
    illustration_alt: 'A tiny smiling cloud above dry yellow fields',
    sort_order: 3,
    transcript:
      'High above the fields lived a very small cloud called Nimbus. The big clouds made thunder and rain, but Nimbus only made a little mist. ' +
      'Below, the fields were dry, and the sunflowers were drooping. "I want to help," said Nimbus. ' +
      'She drank from the lake, one sip, then another, then a hundred more, until she was round and heavy. ' +
      'Then she floated over the fields and let go. Pitter, patter, pitter, patter. ' +
      'The sunflowers lifted their heads, the frogs began to sing, and a rainbow stretched across the sky. ' +
      'Nimbus was small again, but she was smiling, because even a little cloud can make a big difference. The end.',
  },
];
